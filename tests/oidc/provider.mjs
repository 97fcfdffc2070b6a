// A self-contained OpenID provider (oidc-provider 9.13.3) for Warden's OAuth 2.1
// resource-server tests. See README.md for the flows it serves and how to drive them.
//
// Environment:
//   PORT              port on 127.0.0.1 (default 0: the kernel picks a free one)
//   REDIRECT_URIS     comma-separated redirect URIs of the public client `mcp-client`
//                     (default http://127.0.0.1:33418/callback)
//   ACCESS_TOKEN_TTL  access-token lifetime in seconds (default 3600)
//
// Prints exactly one line on stdout once it accepts connections:
//   issuer: http://127.0.0.1:<port>
// Everything else (oidc-provider's notices, key rotations, errors) goes to stderr.

import * as crypto from 'node:crypto';
import * as http from 'node:http';

import Provider, { errors } from 'oidc-provider';

// oidc-provider prints its development notices with console.info (stdout); stdout carries
// only the `issuer:` line, so every console output goes to stderr.
console.log = console.info = console.debug = (...args) => console.error(...args);

const log = (msg) => process.stderr.write(`oidc: ${msg}\n`);

const port = Number(process.env.PORT ?? 0);
const redirectUris = (process.env.REDIRECT_URIS || 'http://127.0.0.1:33418/callback')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const accessTokenTTL = Number(process.env.ACCESS_TOKEN_TTL || 3600);
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
// What a resource server at 127.0.0.1 offers: Warden's scopes (`mcp`: the principal's whole
// authority; `mcp:<capability>`: narrowed to it, docs/oauth.md) and two that are not Warden's.
const RESOURCE_SCOPE = 'mcp mcp:run:projects:demo mcp:run:projects:ops tools:read tools:call';

// Signing keys, newest first: oidc-provider signs with the first matching key and
// publishes all of them at /jwks. Generated in memory at start, never written anywhere.
const signingKeys = [];
let keyCounter = 0;
function newSigningKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  keyCounter += 1;
  const jwk = privateKey.export({ format: 'jwk' });
  return {
    ...jwk,
    kid: `key-${keyCounter}-${crypto.randomBytes(4).toString('hex')}`,
    alg: 'RS256',
    use: 'sig',
  };
}
signingKeys.unshift(newSigningKey());

// Same cookie keys for every Provider instance, so sessions and interactions in flight
// survive a key rotation (which builds a new instance; see rotateKeys).
const cookieKeys = [crypto.randomBytes(32).toString('base64url')];

const groupsOf = (login) => (login.startsWith('sre') ? ['sre'] : ['dev']);
const emailOf = (login) => `${login}@example.com`;

function configuration() {
  return {
    clients: [
      {
        // Confidential machine client: client_credentials only. client_secret_post also
        // accepts HTTP Basic (oidc-provider allows both for a *_post client).
        client_id: 'deploy-pipeline',
        client_secret: 'deploy-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_post',
        scope: 'mcp mcp:run:projects:demo tools:read tools:call',
      },
      {
        // Warden's own client at this issuer, for RFC 8693 token exchange (AUTH-6): HTTP
        // Basic authentication.
        client_id: 'warden',
        client_secret: 'warden-exchange-secret',
        grant_types: [TOKEN_EXCHANGE],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        // Public client: authorization code + PKCE (S256, required for public clients).
        client_id: 'mcp-client',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: redirectUris,
      },
    ],
    jwks: { keys: signingKeys.map((k) => ({ ...k })) },
    cookies: { keys: cookieKeys },
    // Resource scopes are listed here too, so a client's registered `scope` can restrict
    // them (deploy-pipeline may not ask for `mcp:run:projects:ops`) and discovery advertises
    // them.
    scopes: ['openid', 'offline_access', 'email', 'groups', ...RESOURCE_SCOPE.split(' ')],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    // Any login name is an account: sub = login, email = login@example.com,
    // groups = ['sre'] when the login starts with "sre", else ['dev'].
    async findAccount(_ctx, sub) {
      return {
        accountId: sub,
        async claims() {
          return {
            sub, email: emailOf(sub), email_verified: true, groups: groupsOf(sub),
          };
        },
      };
    },
    // email and groups of the end-user in every access token issued for one (JWT
    // access tokens carry them; client_credentials tokens have no end-user and get none).
    // A token minted by token exchange names the client that asked as its actor (RFC 8693
    // `act`).
    async extraTokenClaims(_ctx, token) {
      if (!token.accountId) return undefined;
      const claims = { email: emailOf(token.accountId), groups: groupsOf(token.accountId) };
      if (token.gty === 'token_exchange') claims.act = { sub: token.clientId };
      return claims;
    },
    pkce: {
      required: (_ctx, client) => client.clientAuthMethod === 'none',
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      // Open dynamic client registration (no initial access token), for MCP clients.
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // The resource of the authorization request when it named exactly one.
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        // A token request for an authorization code or refresh token without `resource`
        // gets a token for the resource granted at the authorization endpoint.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => resourceServerInfo(resourceIndicator),
      },
    },
    // OAuth 2.1: authorization code only (no implicit or hybrid response types).
    responseTypes: ['code'],
    clientBasedCORS: () => false,
    ttl: {
      AccessToken: accessTokenTTL,
      ClientCredentials: accessTokenTTL,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 600,
      Session: 86400,
      Grant: 86400,
      RefreshToken: 86400,
    },
  };
}

// What a resource under http://127.0.0.1 gets: RS256 JWT access tokens for it.
function resourceServerInfo(resourceIndicator) {
  const url = URL.parse(resourceIndicator);
  if (!url || url.protocol !== 'http:' || url.hostname !== '127.0.0.1') {
    throw new errors.InvalidTarget('only resources under http://127.0.0.1 are served');
  }
  return {
    scope: RESOURCE_SCOPE,
    audience: resourceIndicator,
    accessTokenTTL,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  };
}

// RFC 8693 token exchange: a subject token this provider signed (an access token of one of
// its users) for a token whose audience is `resource` (or `audience`), for the same user,
// naming the asking client as actor. Counted (POST /admin/exchanges); refused while
// POST /admin/exchange-refuse holds.
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
let exchanges = 0;
let refuseExchanges = false;

function verifiedSubject(token) {
  const [h, p, s] = String(token || '').split('.');
  const decode = (part) => JSON.parse(Buffer.from(part, 'base64url').toString());
  let header;
  let claims;
  try {
    header = decode(h);
    claims = decode(p);
  } catch {
    throw new errors.InvalidGrant('subject_token is not a JWT');
  }
  const jwk = signingKeys.find((k) => k.kid === header.kid);
  if (!jwk) throw new errors.InvalidGrant('subject_token is not signed by this provider');
  const { d, p: _p, q, dp, dq, qi, ...pub } = jwk;
  const key = crypto.createPublicKey({ key: pub, format: 'jwk' });
  const signed = crypto.verify('sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(s || '', 'base64url'));
  if (!signed) throw new errors.InvalidGrant('subject_token signature does not verify');
  if (claims.iss !== issuer) throw new errors.InvalidGrant('subject_token is of another issuer');
  if (!claims.sub || !(claims.exp > Date.now() / 1000)) throw new errors.InvalidGrant('subject_token expired');
  return claims;
}

async function tokenExchange(ctx) {
  const { params, client, provider } = ctx.oidc;
  if (refuseExchanges) throw new errors.InvalidGrant('token exchange is refused (POST /admin/exchange-accept)');
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  const claims = verifiedSubject(params.subject_token);
  const resource = params.resource || params.audience;
  if (!resource) throw new errors.InvalidTarget('name the resource or audience');
  const info = resourceServerInfo(resource);
  const asked = String(params.scope || '').split(' ').filter(Boolean);
  const scope = asked.filter((s) => RESOURCE_SCOPE.split(' ').includes(s)).join(' ');
  const token = new provider.AccessToken({
    accountId: claims.sub,
    client,
    gty: 'token_exchange',
    scope,
    resourceServer: new provider.ResourceServer(resource, info),
  });
  exchanges += 1;
  log(`token exchange #${exchanges}: ${claims.sub} for ${resource} by ${client.clientId}`);
  ctx.body = {
    access_token: await token.save(),
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
    expires_in: token.expiration,
    ...(scope ? { scope } : {}),
  };
}

let issuer;
let handler;
let jwksDown = false;
// Milliseconds /jwks waits before answering (POST /admin/jwks-slow); how often it was asked,
// and how often it answered.
let jwksDelay = 0;
let jwksHits = 0;
let jwksAnswered = 0;

// A fresh Provider over the current key list. State (sessions, interactions, grants,
// registered clients, tokens) lives in oidc-provider's module-level memory adapter, so
// it is shared by every instance in this process.
function buildProvider() {
  const provider = new Provider(issuer, configuration());
  provider.registerGrantType(TOKEN_EXCHANGE, tokenExchange, [
    'subject_token', 'subject_token_type', 'actor_token', 'actor_token_type',
    'requested_token_type', 'resource', 'audience', 'scope',
  ], ['resource', 'audience']);
  provider.on('server_error', (_ctx, err) => log(`server_error: ${err.stack || err}`));
  handler = provider.callback();
}

function rotateKeys() {
  signingKeys.unshift(newSigningKey());
  buildProvider();
  log(`rotated signing keys; signing with ${signingKeys[0].kid}; jwks: ${signingKeys.map((k) => k.kid).join(' ')}`);
  return { kid: signingKeys[0].kid, kids: signingKeys.map((k) => k.kid) };
}

const isLoopback = (addr) => addr === '127.0.0.1' || addr === '::1' || addr === '::ffff:127.0.0.1';

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const path = (req.url || '/').split('?')[0];

  if (path.startsWith('/admin/')) {
    if (!isLoopback(req.socket.remoteAddress)) return json(res, 403, { error: 'forbidden' });
    if (req.method !== 'POST') return json(res, 405, { error: 'method_not_allowed' });
    req.resume();
    switch (path) {
      case '/admin/rotate-keys':
        return json(res, 200, rotateKeys());
      case '/admin/jwks-down':
        jwksDown = true;
        log('jwks is down (503)');
        return json(res, 200, { jwks: 'down' });
      case '/admin/jwks-up':
        jwksDown = false;
        jwksDelay = 0;
        log('jwks is up');
        return json(res, 200, { jwks: 'up' });
      case '/admin/jwks-slow':
        jwksDelay = 3000;
        log('jwks answers after 3 s');
        return json(res, 200, { jwks: 'slow', delayMs: jwksDelay });
      case '/admin/jwks-hits':
        return json(res, 200, { hits: jwksHits, answered: jwksAnswered });
      case '/admin/exchanges':
        return json(res, 200, { exchanges });
      case '/admin/exchange-refuse':
        refuseExchanges = true;
        return json(res, 200, { exchange: 'refused' });
      case '/admin/exchange-accept':
        refuseExchanges = false;
        return json(res, 200, { exchange: 'accepted' });
      default:
        return json(res, 404, { error: 'not_found' });
    }
  }

  if (path === '/jwks') {
    jwksHits += 1;
    res.on('finish', () => {
      jwksAnswered += 1;
    });
    if (jwksDown) {
      req.resume();
      return json(res, 503, { error: 'temporarily_unavailable', error_description: 'JWKS is down (POST /admin/jwks-up)' });
    }
    if (jwksDelay > 0) {
      setTimeout(() => handler(req, res), jwksDelay);
      return undefined;
    }
  }

  return handler(req, res);
});

server.on('error', (err) => {
  log(`cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
});

process.on('SIGHUP', () => rotateKeys());
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));

server.listen(port, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  buildProvider();
  process.stdout.write(`issuer: ${issuer}\n`);
});
