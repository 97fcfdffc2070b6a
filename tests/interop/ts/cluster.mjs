// One client's session through a load balancer in front of several Warden replicas, with the
// official MCP TypeScript SDK (1.32.2, a 2025-11-25 session): run by ../../cluster/cluster.sh.
//
// The tools are listed, a read executes, an ordinary mutation executes, a dangerous mutation
// is parked and its approval id reaches the client; the approver approves it through the
// balancer, the client fetches the outcome through the balancer until it is `executed`; then
// the same session goes on with more reads. Every request goes wherever the balancer sends it.
// Environment: WARDEN_URL (the balancer's /mcp), WARDEN_TOKEN, APPROVER_TOKEN. One JSON line
// per check; exit 1 at the first failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

function emit(check, ok, detail = {}) {
  console.log(JSON.stringify({ sdk: 'ts', check, ok, ...detail }));
  if (!ok) process.exit(1);
}

const { WARDEN_URL: url, WARDEN_TOKEN: token, APPROVER_TOKEN: approver } = process.env;
if (!url || !token || !approver) {
  console.error('cluster.mjs: WARDEN_URL, WARDEN_TOKEN and APPROVER_TOKEN are required');
  process.exit(2);
}
const base = url.replace(/\/mcp$/, '');
const decision = (result) => result._meta?.['warden/decision'] ?? {};

const client = new Client({ name: 'warden-cluster', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const names = (await client.listTools()).tools.map((t) => t.name);
emit('listed', ['notes__list_notes', 'notes__add_note', 'vault__add_note'].every((n) => names.includes(n)), { tools: names });
let result = await client.callTool({ name: 'notes__list_notes', arguments: {} });
emit('read executes', decision(result).status === 'executed' && !result.isError, { decision: decision(result) });
result = await client.callTool({ name: 'notes__add_note', arguments: { text: 'cluster ts' } });
emit('mutation executes', decision(result).status === 'executed' && !result.isError, { decision: decision(result) });
result = await client.callTool({ name: 'vault__add_note', arguments: { text: 'cluster ts parked' } });
const parked = result.structuredContent ?? {};
const approval = String(parked.approvalId ?? '');
emit('dangerous mutation parked, approval id reaches the client',
  parked.status === 'pending_approval' && approval.startsWith('apr_'), { result: parked });
const decided = await fetch(`${base}/api/v1/approvals/${approval}/approve`, {
  method: 'POST',
  headers: { Authorization: `Bearer ${approver}`, 'content-type': 'application/json' },
  body: JSON.stringify({ reason: 'cluster.mjs' }),
});
emit('approved through the balancer', decided.status === 200, { status: decided.status, body: await decided.text() });
let status;
for (let i = 0; i < 100 && status !== 'executed'; i++) {
  const got = await fetch(`${base}/api/v1/approvals/${approval}`, { headers: { Authorization: `Bearer ${token}` } });
  status = got.status === 200 ? (await got.json()).status : got.status;
  if (status !== 'executed') await new Promise((r) => setTimeout(r, 100));
}
emit('the approved call executed', status === 'executed', { status });
for (let i = 0; i < 9; i++) {
  result = await client.callTool({ name: 'notes__list_notes', arguments: {} });
  if (decision(result).status !== 'executed') emit(`the session goes on (read ${i + 1})`, false, { decision: decision(result) });
}
emit('the session goes on', true, { session: transport.sessionId });
await transport.terminateSession();
await client.close();
