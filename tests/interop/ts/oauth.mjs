// OAuth check: the official MCP TypeScript SDK client signs in to Warden through a real
// identity provider (AUTH-4), with its own OAuth support and nothing Warden-specific.
//
// The SDK meets Warden's 401, follows its `WWW-Authenticate: Bearer resource_metadata=…` to
// the RFC 9728 metadata, discovers the authorization server there, registers itself
// dynamically, and sends the user to the authorization URL (authorization code + PKCE, for
// exactly Warden's resource, RFC 8707). The user's part — the login and consent pages — is
// driven here (tests/oidc/login.mjs); the SDK then exchanges the code and lists tools.
//
// Environment: WARDEN_URL (the MCP endpoint), OIDC_LOGIN (who signs in), EXPECT_TOOL (a tool
// that must be listed), EXPECT_PRINCIPAL (what warden__whoami must say). One JSON line per
// check; exit 1 on a failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

import { signIn } from '../../oidc/login.mjs';

const url = new URL(process.env.WARDEN_URL);
const REDIRECT = 'http://127.0.0.1:33418/callback';

function report(check, ok, detail) {
  console.log(JSON.stringify({ sdk: 'typescript', check, ok, detail }));
  if (!ok) process.exit(1);
}

// What an interactive client keeps: its registration, the PKCE verifier, the tokens. The
// "browser" is the sign-in below, started from redirectToAuthorization.
class Provider {
  client = undefined;
  saved = undefined;
  verifier = undefined;
  callback = undefined;
  authorizationUrl = undefined;

  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: 'warden oauth test',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  async redirectToAuthorization(authorizationUrl) {
    this.authorizationUrl = authorizationUrl;
    this.callback = await signIn(authorizationUrl.href, {
      login: process.env.OIDC_LOGIN,
      redirectUri: REDIRECT,
    });
  }
}

const provider = new Provider();
const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
const client = new Client({ name: 'warden-oauth-test', version: '0.0.0' });
let refused;
try {
  await client.connect(first);
} catch (e) {
  refused = e;
}
report('401 starts the OAuth flow', refused instanceof UnauthorizedError && provider.callback !== undefined, String(refused));
const asked = provider.authorizationUrl;
report(
  'asks for a token for exactly this resource',
  asked.searchParams.get('resource') === url.href && asked.searchParams.get('code_challenge_method') === 'S256',
  asked.href,
);
report('registered dynamically', typeof provider.client?.client_id === 'string', provider.client);
await first.finishAuth(provider.callback.searchParams.get('code'));
report('token obtained', typeof provider.saved?.access_token === 'string', provider.saved?.scope);

const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
const signedIn = new Client({ name: 'warden-oauth-test', version: '0.0.0' });
await signedIn.connect(transport);
const tools = (await signedIn.listTools()).tools.map((t) => t.name);
report('tools listed', tools.includes(process.env.EXPECT_TOOL), tools);
const whoami = await signedIn.callTool({ name: 'warden__whoami', arguments: {} });
const who = JSON.parse(whoami.content.map((c) => c.text ?? '').join('')).data;
report('acts as the signed-in user', who.principal === process.env.EXPECT_PRINCIPAL, who);
await signedIn.close();
