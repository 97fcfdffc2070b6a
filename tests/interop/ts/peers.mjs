// Popular upstreams through Warden with the official MCP TypeScript SDK (1.32.2, 2025-11-25).
//
// Run by ../peers.sh (see there): for each upstream of project `peers` the tools are listed,
// a read executes, a mutation is parked and its approval id reaches the client (in
// structuredContent — the SDK checks it against the tool's advertised output schema), and bad
// arguments are denied with VALIDATION. Environment: WARDEN_URL, WARDEN_TOKEN. One JSON line
// per check; exit 1 at the first failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const PEERS = {
  memory: ['read_graph', {}, 'create_entities',
    { entities: [{ name: 'warden-ts', entityType: 'gateway', observations: ['governs'] }] },
    { entities: 'not a list' }],
  everything: ['echo', { message: 'hi' }, 'gzip-file-as-resource', {}, { outputType: 'nope' }],
  apps: ['get-time', {}, null, {}, {}],
  dual: ['echo', { text: 'hi' }, 'add_note', { text: 'from ts' }, { text: 7 }],
  modern: ['echo', { text: 'hi' }, 'add_note', { text: 'from ts' }, { text: 7 }],
};

function emit(check, ok, detail = {}) {
  console.log(JSON.stringify({ sdk: 'ts', check, ok, ...detail }));
  if (!ok) process.exit(1);
}

const url = process.env.WARDEN_URL;
const token = process.env.WARDEN_TOKEN;
if (!url || !token) {
  console.error('peers.mjs: WARDEN_URL and WARDEN_TOKEN are required');
  process.exit(2);
}

const client = new Client({ name: 'warden-peers', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
for (const [upstream, [read, readArgs, mutation, args, bad]] of Object.entries(PEERS)) {
  let name = `${upstream}__${read}`;
  emit(`${upstream}: listed`, tools.has(name), { tool: name });
  let result = await client.callTool({ name, arguments: readArgs });
  const decision = result._meta?.['warden/decision'] ?? {};
  emit(`${upstream}: read executes`, decision.status === 'executed' && !result.isError, { decision });
  if (!mutation) continue;
  name = `${upstream}__${mutation}`;
  result = await client.callTool({ name, arguments: args });
  const parked = result.structuredContent ?? {};
  emit(`${upstream}: mutation parked, approval id reaches the client`,
    parked.status === 'pending_approval' && String(parked.approvalId ?? '').startsWith('apr_') && !result.isError,
    { result: parked });
  result = await client.callTool({ name, arguments: bad });
  const denied = result.structuredContent ?? {};
  emit(`${upstream}: bad arguments denied`, result.isError === true && denied.code === 'VALIDATION',
    { result: denied });
}
const ui = tools.get('apps__get-time')?._meta?.ui ?? {};
emit("apps: the tool's MCP App passes through", ui.resourceUri === 'ui://get-time/mcp-app.html', { meta: ui });
await client.close();
