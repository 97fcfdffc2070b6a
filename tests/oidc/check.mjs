// Self-test of provider.mjs: starts it on a free port, drives every flow the Rust tests
// rely on with plain HTTP (fetch, manual redirects, a tiny cookie jar: exactly what a
// reqwest replay does) and checks the results. `run.sh --check` runs it.
// Exit status 0 when every check passed, 1 otherwise.

import { spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import * as readline from 'node:readline';

import { Jar, follow, signIn, step } from './login.mjs';

const RESOURCE = 'http://127.0.0.1:9999/mcp';
const REDIRECT = 'http://127.0.0.1:33418/callback';

let failures = 0;
function check(cond, what, detail) {
  if (cond) {
    console.log(`ok   ${what}`);
  } else {
    failures += 1;
    console.log(`FAIL ${what}${detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
  }
}

// --- start the provider -------------------------------------------------------------
const child = spawn(process.execPath, [fileURLToPath(new URL('./provider.mjs', import.meta.url))], {
  env: { ...process.env, PORT: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const lines = [];
const rl = readline.createInterface({ input: child.stdout });
rl.on('line', (l) => lines.push(l));
const deadline = Date.now() + 20000;
while (!lines.length && Date.now() < deadline && child.exitCode === null) {
  await new Promise((r) => setTimeout(r, 50));
}
const m = /^issuer: (http:\/\/127\.0\.0\.1:\d+)$/.exec(lines[0] ?? '');
if (!m) {
  console.log(`FAIL provider did not print "issuer: http://127.0.0.1:<port>" (got ${JSON.stringify(lines)})`);
  child.kill();
  process.exit(1);
}
const ISS = m[1];
console.log(`provider at ${ISS}`);

// --- helpers ---------------------------------------------------------------------------
const b64json = (s) => JSON.parse(Buffer.from(s, 'base64url').toString());
const decode = (jwt) => {
  const [h, p] = jwt.split('.');
  return { header: b64json(h), payload: b64json(p) };
};
async function jwks() {
  return (await fetch(`${ISS}/jwks`)).json();
}
// RS256 signature check against the provider's current JWKS.
async function verifies(jwt) {
  const { header } = decode(jwt);
  const jwk = (await jwks()).keys.find((k) => k.kid === header.kid);
  if (!jwk) return false;
  const [h, p, s] = jwt.split('.');
  return crypto.verify('RSA-SHA256', Buffer.from(`${h}.${p}`), crypto.createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(s, 'base64url'));
}
const form = (o) => new URLSearchParams(o);
async function post(path, body, headers = {}) {
  const res = await fetch(`${ISS}${path}`, { method: 'POST', body, headers });
  return { status: res.status, body: await res.json().catch(() => undefined) };
}
async function clientCredentials(extra = {}) {
  return post('/token', form({
    grant_type: 'client_credentials',
    client_id: 'deploy-pipeline',
    client_secret: 'deploy-secret',
    resource: RESOURCE,
    scope: 'tools:read tools:call',
    ...extra,
  }));
}

function pkce() {
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

// The authorization-code + PKCE flow with the devInteractions pages, as a browser would.
async function authorizationCode({
  login, clientId = 'mcp-client', redirectUri = REDIRECT, scope = 'openid tools:read tools:call',
  tokenResource = RESOURCE, jar = new Jar(),
}) {
  const { verifier, challenge } = pkce();
  const state = crypto.randomBytes(8).toString('hex');
  const auth = new URL(`${ISS}/auth`);
  auth.search = form({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope,
    resource: RESOURCE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  });
  const cb = await signIn(auth.href, { login, redirectUri, jar });
  check(cb.searchParams.get('state') === state && cb.searchParams.get('iss') === ISS && cb.searchParams.get('code'), `${login}: redirect to the client with code, state, iss`, cb.href);
  const tokenParams = {
    grant_type: 'authorization_code',
    client_id: clientId,
    code: cb.searchParams.get('code'),
    redirect_uri: redirectUri,
    code_verifier: verifier,
  };
  if (tokenResource) tokenParams.resource = tokenResource;
  return { jar, token: await post('/token', form(tokenParams)) };
}

try {
  // --- discovery ---------------------------------------------------------------------
  const disc = await (await fetch(`${ISS}/.well-known/openid-configuration`)).json();
  check(disc.issuer === ISS, 'discovery: issuer');
  check(disc.jwks_uri === `${ISS}/jwks` && disc.token_endpoint === `${ISS}/token` && disc.authorization_endpoint === `${ISS}/auth` && disc.registration_endpoint === `${ISS}/reg`, 'discovery: endpoints', disc);
  check(JSON.stringify(disc.code_challenge_methods_supported) === '["S256"]', 'discovery: PKCE S256');
  check(disc.grant_types_supported.includes('client_credentials'), 'discovery: client_credentials');

  // --- client credentials --------------------------------------------------------------
  const cc = await clientCredentials();
  check(cc.status === 200 && cc.body.token_type === 'Bearer', 'client_credentials: 200 Bearer', cc);
  const ccJwt = cc.body.access_token;
  const { header: ch, payload: cp } = decode(ccJwt);
  check(ch.alg === 'RS256' && ch.typ === 'at+jwt' && ch.kid, 'client_credentials: RS256 at+jwt with kid', ch);
  check(cp.aud === RESOURCE && cp.iss === ISS && cp.client_id === 'deploy-pipeline' && cp.sub === 'deploy-pipeline' && cp.scope === 'tools:read tools:call' && cp.exp > cp.iat, 'client_credentials: aud, iss, client_id, sub, scope, exp', cp);
  check(await verifies(ccJwt), 'client_credentials: signature verifies against /jwks');
  const basic = await post('/token', form({ grant_type: 'client_credentials', resource: RESOURCE, scope: 'tools:read' }), {
    authorization: `Basic ${Buffer.from('deploy-pipeline:deploy-secret').toString('base64')}`,
  });
  check(basic.status === 200 && decode(basic.body.access_token).payload.scope === 'tools:read', 'client_credentials: HTTP Basic works too', basic);
  const other = await clientCredentials({ resource: 'https://example.com/mcp' });
  check(other.status === 400 && other.body.error === 'invalid_target', 'client_credentials: a resource outside http://127.0.0.1 is invalid_target', other);
  const mcpScope = await clientCredentials({ scope: 'tools:read mcp:run:projects:ops' });
  check(mcpScope.status === 400 && mcpScope.body.error === 'invalid_scope', 'client_credentials: scope outside the client\'s is invalid_scope', mcpScope);
  const badSecret = await clientCredentials({ client_secret: 'wrong' });
  check(badSecret.status === 401 && badSecret.body.error === 'invalid_client', 'client_credentials: wrong secret is invalid_client', badSecret);

  // --- authorization code + PKCE -------------------------------------------------------
  {
    const { jar, token } = await authorizationCode({ login: 'sre-alice' });
    check(token.status === 200, 'auth code (sre-alice): token 200', token);
    const { payload: p } = decode(token.body.access_token);
    check(p.aud === RESOURCE && p.iss === ISS && p.sub === 'sre-alice' && p.client_id === 'mcp-client' && p.scope === 'tools:read tools:call', 'auth code (sre-alice): aud, iss, sub, client_id, scope', p);
    check(p.email === 'sre-alice@example.com' && JSON.stringify(p.groups) === '["sre"]', 'auth code (sre-alice): email, groups [sre] in the access token', p);
    check(await verifies(token.body.access_token), 'auth code (sre-alice): signature verifies');
    check(decode(token.body.id_token).payload.sub === 'sre-alice', 'auth code (sre-alice): id_token sub');
    // Same browser session again: no login, no consent (the grant is remembered).
    const again = await authorizationCode({ login: 'ignored', jar });
    check(again.token.status === 200 && decode(again.token.body.access_token).payload.sub === 'sre-alice', 'auth code: a second authorization in the same session needs no forms', again.token);
  }
  {
    // No openid scope, no resource at the token endpoint: the granted resource is used.
    const { token } = await authorizationCode({ login: 'bob', scope: 'tools:read', tokenResource: undefined });
    const { payload: p } = decode(token.body.access_token ?? 'e30.e30');
    check(token.status === 200 && p.aud === RESOURCE && p.scope === 'tools:read' && JSON.stringify(p.groups) === '["dev"]' && p.email === 'bob@example.com', 'auth code (bob, no openid, no token resource): aud, scope, groups [dev]', token.body);
  }
  {
    // PKCE is required for the public client.
    const auth = new URL(`${ISS}/auth`);
    auth.search = form({ client_id: 'mcp-client', response_type: 'code', redirect_uri: REDIRECT, scope: 'tools:read', resource: RESOURCE, state: 's' });
    const r = await step(new Jar(), auth.href);
    const loc = r.location ? new URL(r.location) : undefined;
    check(loc?.href.startsWith(REDIRECT) && loc.searchParams.get('error') === 'invalid_request' && /PKCE/.test(loc.searchParams.get('error_description')), 'auth code: without code_challenge the client gets error=invalid_request', r.location);
    const { challenge } = pkce();
    // Wrong verifier at the token endpoint.
    const jar = new Jar();
    auth.search = form({ client_id: 'mcp-client', response_type: 'code', redirect_uri: REDIRECT, scope: 'tools:read', resource: RESOURCE, code_challenge: challenge, code_challenge_method: 'S256' });
    let f = await follow(jar, auth.href, {}, REDIRECT);
    f = await follow(jar, f.url, { method: 'POST', body: form({ prompt: 'login', login: 'carol', password: 'x' }) }, REDIRECT);
    f = await follow(jar, f.url, { method: 'POST', body: form({ prompt: 'consent' }) }, REDIRECT);
    const bad = await post('/token', form({ grant_type: 'authorization_code', client_id: 'mcp-client', code: f.callback.searchParams.get('code'), redirect_uri: REDIRECT, code_verifier: pkce().verifier, resource: RESOURCE }));
    check(bad.status === 400 && bad.body.error === 'invalid_grant', 'auth code: a wrong code_verifier is invalid_grant', bad);
  }
  {
    // Dynamic client registration, as the MCP TypeScript SDK does it, then the flow.
    const redirectUri = 'http://localhost:45678/callback';
    const reg = await post('/reg', JSON.stringify({
      redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], client_name: 'check.mjs',
    }), { 'content-type': 'application/json' });
    check(reg.status === 201 && reg.body.client_id, 'registration: 201 with a client_id', reg);
    const { token } = await authorizationCode({ login: 'dana', clientId: reg.body.client_id, redirectUri });
    check(token.status === 200 && decode(token.body.access_token).payload.client_id === reg.body.client_id, 'registration: the registered client completes the flow', token);
  }

  // --- key rotation and JWKS outage --------------------------------------------------
  const kid1 = decode(ccJwt).header.kid;
  const rot = await post('/admin/rotate-keys', '');
  check(rot.status === 200 && rot.body.kid !== kid1 && rot.body.kids.length === 2 && rot.body.kids[1] === kid1, 'rotate-keys: new kid, both kids listed', rot);
  const keys = (await jwks()).keys;
  check(keys.length === 2 && keys.every((k) => !k.d) && keys.map((k) => k.kid).join() === rot.body.kids.join(), 'rotate-keys: /jwks has both public keys', keys);
  const cc2 = await clientCredentials();
  check(decode(cc2.body.access_token).header.kid === rot.body.kid, 'rotate-keys: new tokens carry the new kid');
  check(await verifies(cc2.body.access_token) && await verifies(ccJwt), 'rotate-keys: new and old tokens both verify against /jwks');
  process.kill(child.pid, 'SIGHUP');
  await new Promise((r) => setTimeout(r, 500));
  const kid3 = decode((await clientCredentials()).body.access_token).header.kid;
  check((await jwks()).keys.length === 3 && kid3 !== rot.body.kid && kid3 !== kid1, 'SIGHUP: rotates as well (3 keys, a third kid)');
  const down = await post('/admin/jwks-down', '');
  const jwksDown = await fetch(`${ISS}/jwks`);
  check(down.status === 200 && jwksDown.status === 503, 'jwks-down: /jwks answers 503', jwksDown.status);
  check((await fetch(`${ISS}/.well-known/openid-configuration`)).status === 200 && (await clientCredentials()).status === 200, 'jwks-down: discovery and the token endpoint still work');
  await post('/admin/jwks-up', '');
  check((await fetch(`${ISS}/jwks`)).status === 200, 'jwks-up: /jwks answers 200 again');
  check((await fetch(`${ISS}/admin/rotate-keys`)).status === 405, 'admin: GET is refused (405)');
} catch (err) {
  failures += 1;
  console.log(`FAIL ${err.stack || err}`);
} finally {
  child.kill('SIGTERM');
  await once(child, 'exit');
}

console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
