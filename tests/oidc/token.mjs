// Prints an access token of the provider for a resource, for tests and the worked example of
// docs/oauth.md:
//
//   node token.mjs ISSUER RESOURCE --login NAME [--scope "mcp"]      (authorization code + PKCE
//                                                                     through the login pages)
//   node token.mjs ISSUER RESOURCE --client ID:SECRET [--scope "mcp"] (client credentials)
//
// The public client is `mcp-client` with redirect URI http://127.0.0.1:33418/callback
// (provider.mjs); nothing needs to listen there. Exit 1 with the provider's answer on failure.

import * as crypto from 'node:crypto';
import { parseArgs } from 'node:util';

import { signIn } from './login.mjs';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    login: { type: 'string' },
    client: { type: 'string' },
    scope: { type: 'string', default: 'mcp' },
    redirect: { type: 'string', default: 'http://127.0.0.1:33418/callback' },
  },
});
const [issuer, resource] = positionals;
if (!issuer || !resource || !values.login === !values.client) {
  console.error('usage: token.mjs ISSUER RESOURCE (--login NAME | --client ID:SECRET) [--scope S]');
  process.exit(2);
}

async function token(params) {
  const res = await fetch(`${issuer}/token`, { method: 'POST', body: new URLSearchParams(params) });
  const body = await res.json().catch(() => ({}));
  if (res.status !== 200 || !body.access_token) {
    console.error(`token endpoint answered ${res.status}: ${JSON.stringify(body)}`);
    process.exit(1);
  }
  return body.access_token;
}

if (values.client) {
  const [id, secret] = values.client.split(':');
  console.log(await token({
    grant_type: 'client_credentials', client_id: id, client_secret: secret, resource, scope: values.scope,
  }));
} else {
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const auth = new URL(`${issuer}/auth`);
  auth.search = new URLSearchParams({
    client_id: 'mcp-client',
    response_type: 'code',
    redirect_uri: values.redirect,
    scope: values.scope,
    resource,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const callback = await signIn(auth.href, { login: values.login, redirectUri: values.redirect });
  console.log(await token({
    grant_type: 'authorization_code',
    client_id: 'mcp-client',
    code: callback.searchParams.get('code'),
    redirect_uri: values.redirect,
    code_verifier: verifier,
    resource,
  }));
}
