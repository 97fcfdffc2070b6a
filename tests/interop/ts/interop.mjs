// Interop checks: drive Warden with the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in package.json). The TS SDK 1.32 speaks only the 2025-11-25 era (initialize handshake).
//
// Configuration (environment):
//   WARDEN_URL          MCP endpoint of a running `warden serve`, e.g. http://127.0.0.1:8650/mcp
//   WARDEN_TOKEN        a full-access token
//   WARDEN_BOUND_TOKEN  optional: a token bound to project `demo` only ("hidden tool == unknown tool")
//   WARDEN_BIN          optional: the warden binary, for the stdio leg (`warden stdio`)
//   WARDEN_DATA_DIR     optional: data directory for `warden stdio --data-dir`
//   WARDEN_RELAY_PREFIX optional: prefix of a 2025-11-25 `warden_fixture notes` upstream visible to
//                       WARDEN_TOKEN (run.sh: `relay`); turns on the relay checks (XPORT-4) of the
//                       http-2025 leg: progress, logging, elicitation, sampling, cancellation. They
//                       use their own connection, whose client declares elicitation and sampling.
//   INTEROP_ERAS        optional comma list of legs: http-2025, stdio (default: every leg configured;
//                       `http-2026` is accepted and skipped: this SDK has no 2026-07-28 support)
//
// Prints one JSON line per check on stdout; exits 1 on the first failure (2 on bad configuration).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const LEGACY = '2025-11-25';
const ALL_LEGS = ['http-2025', 'stdio'];
const DEMO_TOOLS = [
  'notes__list_notes',
  'notes__add_note',
  'notes__delete_note',
  'warden__whoami',
  'warden__explain',
];
const DECISION_KEY = 'warden/decision';
const RUN_ID = /run_[0-9A-Za-z]+/g;

class CheckFailed extends Error {}

function emit(leg, check, ok, detail = {}) {
  process.stdout.write(JSON.stringify({ sdk: 'typescript', leg, check, ok, ...detail }) + '\n');
}

function expect(cond, message) {
  if (!cond) throw new CheckFailed(message);
}

function describe(err) {
  if (err instanceof Error) {
    const code = err.code !== undefined ? ` (code ${err.code})` : '';
    return `${err.name}${code}: ${err.message}`;
  }
  return String(err);
}

function decision(result) {
  const d = result?._meta?.[DECISION_KEY];
  expect(d && typeof d === 'object', `no _meta["${DECISION_KEY}"] object in the result: ${JSON.stringify(result)}`);
  return d;
}

// JSON with sorted keys, so two results compare independent of key order.
function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical(value[k])]),
    );
  }
  return value;
}

function scrub(result, tool) {
  return JSON.stringify(canonical(result)).replace(RUN_ID, 'run_X').split(tool).join('TOOL');
}

class Leg {
  constructor(name) {
    this.name = name;
  }

  async check(check, body) {
    let detail;
    try {
      detail = await body();
    } catch (err) {
      const message = err instanceof CheckFailed ? err.message : describe(err);
      emit(this.name, check, false, { error: message });
      throw new CheckFailed(`${check}: ${message}`);
    }
    emit(this.name, check, true, detail ?? {});
    return detail;
  }
}

async function toolNames(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

async function expectExecuted(client, tool, args) {
  const result = await client.callTool({ name: tool, arguments: args });
  const d = decision(result);
  expect(
    d.status === 'executed' && !result.isError,
    `${tool}: expected status executed and isError false, got ${JSON.stringify(result)}`,
  );
  expect(typeof d.runId === 'string' && d.runId.startsWith('run_'), `${tool}: bad runId in ${JSON.stringify(d)}`);
  return { runId: d.runId, structuredContent: result.structuredContent };
}

async function expectDenied(client, tool, args, code) {
  const result = await client.callTool({ name: tool, arguments: args });
  const d = decision(result);
  const sc = result.structuredContent;
  expect(result.isError === true, `${tool}: expected isError true, got ${JSON.stringify(result)}`);
  expect(d.status === 'denied' && d.code === code, `${tool}: expected decision denied/${code}, got ${JSON.stringify(d)}`);
  expect(
    sc && sc.status === 'denied' && sc.code === code && sc.runId === d.runId && typeof sc.message === 'string',
    `${tool}: structuredContent is not the denial contract {status: denied, code: ${code}, runId, message}: ${JSON.stringify(sc)}`,
  );
  return { code, runId: d.runId };
}

async function expectPending(client, tool, args) {
  const result = await client.callTool({ name: tool, arguments: args });
  const d = decision(result);
  const sc = result.structuredContent;
  expect(result.isError !== true, `${tool}: a parked call is not an error, got ${JSON.stringify(result)}`);
  expect(
    d.status === 'pending_approval' && String(d.approvalId || '').startsWith('apr_'),
    `${tool}: expected decision pending_approval with an approvalId, got ${JSON.stringify(d)}`,
  );
  expect(
    sc && sc.status === 'pending_approval' && sc.approvalId === d.approvalId && sc.runId === d.runId && !('code' in sc),
    `${tool}: structuredContent is not the pending contract: ${JSON.stringify(sc)}`,
  );
  return { approvalId: d.approvalId, runId: d.runId };
}

function negotiatedCheck(getVersion) {
  return async () => {
    const version = getVersion();
    expect(version === LEGACY, `negotiated ${JSON.stringify(version)}, expected ${LEGACY}`);
    return { protocolVersion: version };
  };
}

async function runChecks(leg, client, getVersion) {
  await leg.check('protocol-version', negotiatedCheck(getVersion));
  await leg.check('tools/list demo tools', async () => {
    const names = await toolNames(client);
    const missing = DEMO_TOOLS.filter((t) => !names.includes(t));
    expect(missing.length === 0, `tools/list lacks ${JSON.stringify(missing)}; got ${JSON.stringify(names)}`);
    return { tools: names.length };
  });
  await leg.check('read notes__list_notes executed', () => expectExecuted(client, 'notes__list_notes', {}));
  await leg.check('mutation notes__add_note executed', () =>
    expectExecuted(client, 'notes__add_note', { text: 'from typescript' }),
  );
  await leg.check('dangerous notes__delete_note parked pending_approval', () =>
    expectPending(client, 'notes__delete_note', { id: 1 }),
  );
  await leg.check('invalid notes__add_note denied VALIDATION', () =>
    expectDenied(client, 'notes__add_note', {}, 'VALIDATION'),
  );
}

async function runBoundChecks(leg, client, getVersion) {
  await leg.check('bound: protocol-version', negotiatedCheck(getVersion));
  await leg.check('bound: tools/list hides other__*', async () => {
    const names = await toolNames(client);
    expect(names.includes('notes__list_notes'), `bound token does not see demo tools: ${JSON.stringify(names)}`);
    const leaked = names.filter((n) => n.startsWith('other__'));
    expect(leaked.length === 0, `a token bound to project demo lists tools of project other: ${JSON.stringify(leaked)}`);
    return { tools: names.length };
  });
  await leg.check('bound: other__echo answers like nope__missing', async () => {
    const hidden = await client.callTool({ name: 'other__echo', arguments: { text: 'hi' } });
    const unknown = await client.callTool({ name: 'nope__missing', arguments: { text: 'hi' } });
    expect(
      hidden.isError === true && unknown.isError === true,
      `both must be errors: hidden=${JSON.stringify(hidden)} unknown=${JSON.stringify(unknown)}`,
    );
    const sh = scrub(hidden, 'other__echo');
    const su = scrub(unknown, 'nope__missing');
    expect(
      sh === su,
      'hidden tool answers differently from an unknown tool (run ids and tool names scrubbed):\n' +
        `  other__echo   -> ${sh}\n  nope__missing -> ${su}`,
    );
    return { code: decision(hidden).code };
  });
}

function newClient() {
  return new Client({ name: 'warden-interop-ts', version: '0.0.0' }, { capabilities: {} });
}

const RELAY_ANSWER = 'from-ts';
const RELAY_SAMPLED = 'sampled by ts';

// A client that declares elicitation and sampling, answers both, and records (with arrival
// times, performance.now()) what its handlers were sent.
function newRelayClient(heard) {
  const client = new Client(
    { name: 'warden-interop-ts-relay', version: '0.0.0' },
    { capabilities: { elicitation: {}, sampling: {} } },
  );
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    heard.logs.push([performance.now(), n.params.data]);
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    heard.elicitations.push(req.params.message);
    return { action: 'accept', content: { answer: RELAY_ANSWER } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    heard.samplings += 1;
    return { role: 'assistant', content: { type: 'text', text: RELAY_SAMPLED }, model: 'interop-model' };
  });
  return client;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// XPORT-4 over a 2025-11-25 session: what the upstream sends during a call reaches this client.
async function runRelayChecks(leg, client, getVersion, heard, prefix) {
  const tool = (name) => `${prefix}__${name}`;
  const logsFrom = heard.logs.length;

  await leg.check('relay: protocol-version', negotiatedCheck(getVersion));
  await leg.check('relay: progress arrives in order while the call runs', async () => {
    const seen = [];
    const started = performance.now();
    const result = await client.callTool({ name: tool('progress'), arguments: { steps: 5, delay_ms: 100 } }, undefined, {
      onprogress: (p) => seen.push([performance.now(), p.progress]),
    });
    const done = performance.now();
    expect(
      decision(result).status === 'executed' && !result.isError,
      `expected an executed call, got ${JSON.stringify(result)}`,
    );
    const values = seen.map(([, p]) => p);
    expect(values.length >= 5, `expected at least 5 progress notifications, got ${JSON.stringify(values)}`);
    expect(
      values.every((v, i) => i === 0 || values[i - 1] < v),
      `progress is not increasing: ${JSON.stringify(values)}`,
    );
    // Relayed while the call ran, not all at the end: the first came well before the result.
    const lead = done - seen[0][0];
    expect(
      lead >= 200,
      `the first progress arrived only ${Math.round(lead)} ms before the result (call took ${Math.round(done - started)} ms)`,
    );
    return { progress: values, firstBeforeResultMs: Math.round(lead), callMs: Math.round(done - started) };
  });
  await leg.check('relay: log messages reach the logging callback', async () => {
    // They travel on the call's stream ahead of its result; allow a moment anyway.
    for (let waited = 0; heard.logs.length === logsFrom && waited < 5000; waited += 50) await sleep(50);
    const data = heard.logs.slice(logsFrom).map(([, d]) => d);
    expect(data.length >= 1, 'no notifications/message reached the logging handler');
    expect(
      data.some((d) => d && typeof d === 'object' && 'step' in d),
      `unexpected log data: ${JSON.stringify(data)}`,
    );
    return { logs: data.length };
  });
  await leg.check('relay: elicitation answered by the client reaches the upstream', async () => {
    const question = 'which account? (typescript)';
    const result = await client.callTool({ name: tool('ask'), arguments: { question } });
    const sc = result.structuredContent;
    expect(
      result.isError !== true && sc && sc.action === 'accept',
      `expected the accepted ElicitResult, got ${JSON.stringify(result)}`,
    );
    const answer = sc.content?.answer;
    expect(answer === RELAY_ANSWER, `the upstream got answer ${JSON.stringify(answer)}, expected ${RELAY_ANSWER}`);
    expect(
      heard.elicitations.length === 1 && heard.elicitations[0] === question,
      `the elicitation handler was asked ${JSON.stringify(heard.elicitations)}`,
    );
    return { answer };
  });
  await leg.check('relay: sampling answered by the client reaches the upstream', async () => {
    const result = await client.callTool({ name: tool('sample'), arguments: { prompt: 'hi' } });
    const text = JSON.stringify(result);
    expect(result.isError !== true && text.includes(RELAY_SAMPLED), `the sampled text is not in the result: ${text}`);
    expect(heard.samplings === 1, `the sampling handler ran ${heard.samplings} times, expected once`);
    return { model: result.structuredContent?.model };
  });
  await leg.check('relay: client cancellation reaches the upstream', async () => {
    const cancellations = async () => {
      const result = await client.callTool({ name: tool('cancellations'), arguments: {} });
      const n = result.structuredContent?.cancellations;
      expect(Number.isInteger(n), `bad ${tool('cancellations')} result: ${JSON.stringify(result)}`);
      return n;
    };
    const before = await cancellations();
    // Aborting the signal rejects the call; the SDK then sends notifications/cancelled.
    const controller = new AbortController();
    const call = client.callTool({ name: tool('slow'), arguments: { ms: 30000 } }, undefined, {
      signal: controller.signal,
    });
    const timer = setTimeout(() => controller.abort('cancelled by the interop check'), 1000);
    let outcome;
    try {
      outcome = await call;
    } catch (err) {
      outcome = err;
    } finally {
      clearTimeout(timer);
    }
    expect(
      controller.signal.aborted && outcome instanceof Error,
      `${tool('slow')} returned before it was cancelled: ${JSON.stringify(outcome)}`,
    );
    let after = before;
    for (let waited = 0; waited < 10000; waited += 100) {
      after = await cancellations();
      if (after >= before + 1) break;
      await sleep(100);
    }
    expect(after >= before + 1, `the upstream never saw the cancellation (cancellations ${before} -> ${after})`);
    return { cancellations: after, before };
  });
}

// Connects, runs `body(client, getVersion)`, always closes (which also ends a stdio child).
async function withConnection(connect, body) {
  const { client, getVersion, transport } = await connect();
  try {
    await body(client, getVersion);
  } finally {
    if (transport instanceof StreamableHTTPClientTransport) {
      // Ends the 2025 session (HTTP DELETE) before closing, as a well-behaved client does.
      await transport.terminateSession().catch(() => {});
    }
    await client.close().catch(() => {});
  }
}

function httpConnector(url, token, makeClient = newClient) {
  return async () => {
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = makeClient();
    await client.connect(transport);
    return { client, transport, getVersion: () => transport.protocolVersion };
  };
}

function stdioConnector(bin, dataDir, token) {
  return async () => {
    const transport = new StdioClientTransport({
      command: bin,
      args: ['stdio', ...(dataDir ? ['--data-dir', dataDir] : [])],
      env: { ...getDefaultEnvironment(), WARDEN_TOKEN: token, WARDEN_LOG: process.env.INTEROP_WARDEN_LOG || 'warn' },
      stderr: 'inherit',
    });
    // The stdio transport keeps no protocol version; Client.connect hands it the negotiated
    // one through this optional hook (as it does for the HTTP transport).
    let negotiated;
    transport.setProtocolVersion = (v) => {
      negotiated = v;
    };
    const client = newClient();
    await client.connect(transport);
    return { client, transport, getVersion: () => negotiated };
  };
}

async function runLeg(name, cfg) {
  const leg = new Leg(name);
  const connect =
    name === 'http-2025'
      ? (token) => httpConnector(cfg.url, token)
      : (token) => stdioConnector(cfg.bin, cfg.dataDir, token);
  try {
    await withConnection(connect(cfg.token), (client, v) => runChecks(leg, client, v));
    if (cfg.bound) {
      await withConnection(connect(cfg.bound), (client, v) => runBoundChecks(leg, client, v));
    } else {
      emit(name, 'bound-token checks', true, { skipped: 'WARDEN_BOUND_TOKEN not set' });
    }
    if (name === 'http-2025') {
      if (cfg.relay) {
        const heard = { logs: [], elicitations: [], samplings: 0 };
        await withConnection(httpConnector(cfg.url, cfg.token, () => newRelayClient(heard)), (client, v) =>
          runRelayChecks(leg, client, v, heard, cfg.relay),
        );
      } else {
        emit(name, 'relay checks', true, { skipped: 'WARDEN_RELAY_PREFIX not set' });
      }
    }
  } catch (err) {
    if (err instanceof CheckFailed) throw err;
    emit(name, 'connect', false, { error: describe(err) });
    throw new CheckFailed(`connect: ${describe(err)}`);
  }
}

function configure() {
  const cfg = {
    url: process.env.WARDEN_URL || undefined,
    token: process.env.WARDEN_TOKEN || undefined,
    bound: process.env.WARDEN_BOUND_TOKEN || undefined,
    bin: process.env.WARDEN_BIN || undefined,
    dataDir: process.env.WARDEN_DATA_DIR || undefined,
    relay: process.env.WARDEN_RELAY_PREFIX || undefined,
  };
  const fail = (msg) => {
    process.stderr.write(`interop.mjs: ${msg}\n`);
    process.exit(2);
  };
  if (!cfg.token) fail('WARDEN_TOKEN is required');
  const available = ALL_LEGS.filter((leg) => (leg === 'http-2025' ? cfg.url : cfg.bin));
  const requested = (process.env.INTEROP_ERAS || '').trim();
  if (!requested) {
    if (available.length === 0) fail('set WARDEN_URL (http-2025 leg) and/or WARDEN_BIN (stdio leg)');
    return { legs: available, cfg };
  }
  const legs = [];
  for (const raw of requested.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (raw === 'http-2026') {
      emit(raw, 'leg', true, { skipped: 'the TypeScript SDK 1.32 speaks 2025-11-25 only' });
      continue;
    }
    const leg = raw === 'stdio-2025' ? 'stdio' : raw; // the TS stdio leg is 2025-11-25 anyway
    if (!ALL_LEGS.includes(leg)) fail(`unknown leg ${JSON.stringify(raw)} in INTEROP_ERAS (known: ${ALL_LEGS.join(', ')})`);
    if (!available.includes(leg)) fail(`leg ${JSON.stringify(leg)} needs ${leg === 'http-2025' ? 'WARDEN_URL' : 'WARDEN_BIN'}`);
    if (!legs.includes(leg)) legs.push(leg);
  }
  return { legs, cfg };
}

async function main() {
  const { legs, cfg } = configure();
  for (const name of legs) {
    try {
      await runLeg(name, cfg);
    } catch (err) {
      process.stderr.write(`interop.mjs: FAILED in leg ${name}: ${err instanceof CheckFailed ? err.message : describe(err)}\n`);
      return 1;
    }
  }
  process.stdout.write(JSON.stringify({ sdk: 'typescript', summary: 'all checks passed', legs }) + '\n');
  return 0;
}

process.exitCode = await main();
