// Signing in at the provider's devInteractions pages as a browser would: plain HTTP with
// manual redirects and a cookie jar that honours Path (the provider scopes its interaction
// cookies to /interaction/<uid> and /auth/<uid>). Used by check.mjs, token.mjs and the
// TypeScript SDK's OAuth test (tests/interop/ts/oauth.mjs); no dependencies but fetch.

export class Jar {
  #cookies = new Map(); // `${path} ${name}` -> { name, value, path }

  store(res) {
    for (const sc of res.headers.getSetCookie()) {
      const [pair, ...attrs] = sc.split(';').map((s) => s.trim());
      const i = pair.indexOf('=');
      const name = pair.slice(0, i);
      const value = pair.slice(i + 1);
      let path = '/';
      let expired = value === '';
      for (const a of attrs) {
        const [k, v] = a.split('=');
        if (k.toLowerCase() === 'path') path = v;
        if (k.toLowerCase() === 'expires' && Date.parse(v) < Date.now()) expired = true;
      }
      const key = `${path} ${name}`;
      if (expired) this.#cookies.delete(key);
      else this.#cookies.set(key, { name, value, path });
    }
  }

  header(url) {
    const { pathname } = new URL(url);
    return [...this.#cookies.values()]
      .filter((c) => pathname === c.path || pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`) || c.path === '/')
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }
}

// One request, no automatic redirects; returns the response and the absolute Location.
export async function step(jar, url, init = {}) {
  const res = await fetch(url, {
    ...init,
    redirect: 'manual',
    headers: { ...(init.headers ?? {}), cookie: jar.header(url) },
  });
  jar.store(res);
  const loc = res.headers.get('location');
  return { res, location: loc ? new URL(loc, url).href : undefined, text: await res.text() };
}

// Follows redirects (303 -> GET) until a 200 page or a redirect to the client's
// redirect_uri; returns { page, url } or { callback }.
export async function follow(jar, url, init, redirectUri) {
  let r = await step(jar, url, init);
  for (let i = 0; i < 10; i++) {
    if (!r.location) return { page: r.text, url, status: r.res.status };
    if (r.location.startsWith(redirectUri)) return { callback: new URL(r.location) };
    url = r.location;
    r = await step(jar, url);
  }
  throw new Error('too many redirects');
}

// From an authorization URL to the redirect to the client: the login page (any password),
// then the consent page. Returns the callback URL (with `code`, `state`, `iss`).
export async function signIn(authorizationUrl, { login, redirectUri, jar = new Jar() }) {
  let r = await follow(jar, authorizationUrl, {}, redirectUri);
  for (let i = 0; i < 3 && !r.callback; i++) {
    // The login and consent forms both post to the page's own URL, /interaction/<uid>.
    const action = /<form[^>]*action="([^"]+)"/.exec(r.page ?? '')?.[1];
    const prompt = /name="prompt" value="([a-z]+)"/.exec(r.page ?? '')?.[1];
    if (!action || new URL(action).href !== r.url) {
      throw new Error(`unexpected page at ${r.url} (${r.status}): ${(r.page ?? '').slice(0, 300)}`);
    }
    const body = prompt === 'login'
      ? new URLSearchParams({ prompt, login, password: 'any' })
      : new URLSearchParams({ prompt });
    r = await follow(jar, action, { method: 'POST', body }, redirectUri);
  }
  if (!r.callback) throw new Error('the provider did not redirect to the client');
  return r.callback;
}
