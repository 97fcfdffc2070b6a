#!/usr/bin/env bash
# Popular upstream MCP servers through Warden, for the official clients (issue: "both protocol
# eras, every pairing"): a fresh `warden serve` on 127.0.0.1 with five upstreams in project
# `peers` — `@modelcontextprotocol/server-memory` and `server-everything` (2025-11-25 only), the
# MCP Apps example `server-basic-vanillajs` (2025-11-25 only), `warden_fixture notes` (rmcp,
# both eras) and `warden_fixture notes --only-2026` — none pinned to an era, and the admin at
# autonomy L1, so that every governed mutation is parked for approval. Then:
#
#   - python/peers.py with the Python SDK, `mode="auto"` and `mode="legacy"`;
#   - ts/peers.mjs with the TypeScript SDK (2025-11-25);
#   - the MCP Inspector CLI, `--protocol-era legacy` and `modern`: lists, calls a read, finds
#     the MCP App of `apps__get-time` (`--app-info`); a parked call gives its approval id
#     (legacy), or is a task the Inspector waits on until the user `approver` approves it,
#     then its result (modern: the Inspector declares the tasks extension; APR-7).
#
# Each client, for each upstream: lists its tools, calls a read (executed), a mutation (parked:
# its approval id reaches the client) and a call with bad arguments (denied, VALIDATION).
#
#   WARDEN_BIN, FIXTURE_BIN  the binaries (default: <repo>/target/debug/…)
#   INTEROP_PORT             listen port (default 8651)
#   INTEROP_VENV             Python venv with python/requirements.txt (created if missing)
#   NODE_BIN_DIR             a directory holding Node >= 22 (the Inspector needs it); else the
#                            `node` on PATH, else node@22 from npm into NODE22_PREFIX
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
WARDEN_BIN="${WARDEN_BIN:-$repo/target/debug/warden}"
FIXTURE_BIN="${FIXTURE_BIN:-$(dirname "$WARDEN_BIN")/warden_fixture}"
port="${INTEROP_PORT:-8651}"
venv="${INTEROP_VENV:-/tmp/warden-interop-venv}"

die() { echo "peers.sh: $*" >&2; exit 2; }
[ -x "$WARDEN_BIN" ] || die "no warden binary at $WARDEN_BIN"
[ -x "$FIXTURE_BIN" ] || die "no warden_fixture binary at $FIXTURE_BIN"

# npm 11.19 and later run a dependency's install scripts only where the project allows them,
# and the `node` package's preinstall script is what fetches Node: a package.json of the
# install directory allows it (older npm ignores the field). What an earlier install left
# without Node goes first, or npm would find nothing to do.
allow_node_scripts() {
    rm -rf node_modules package-lock.json
    printf '{"private": true, "allowScripts": {"node": true}}\n' >package.json
}
# Node >= 22 for the Inspector (the servers and the TypeScript SDK run on it too).
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
[ -n "${NODE_BIN_DIR:-}" ] && PATH="$NODE_BIN_DIR:$PATH"
if (($(node_major) < 22)); then
  prefix="${NODE22_PREFIX:-$here/peers/.node22}"
  if [ ! -x "$prefix/node_modules/.bin/node" ]; then
    mkdir -p "$prefix"
    (cd "$prefix" && allow_node_scripts && npm install --no-audit --no-fund --no-save --silent node@22 >&2) || die "npm install node@22 failed"
  fi
  PATH="$prefix/node_modules/.bin:$PATH"
fi
[ -x "$here/peers/node_modules/.bin/mcp-inspector" ] ||
  (cd "$here/peers" && npm ci --no-audit --no-fund --silent) || die "npm ci (peers) failed"
[ -d "$here/ts/node_modules/@modelcontextprotocol/sdk" ] ||
  (cd "$here/ts" && npm ci --no-audit --no-fund --silent) || die "npm ci (ts) failed"
bash "$here/venv.sh" "$venv"

data="$(mktemp -d /tmp/warden-peers.XXXXXX)"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

modules="$here/peers/node_modules/@modelcontextprotocol"
node_bin="$(command -v node)"
cat >"$data/peers.yaml" <<EOF
kind: Project
name: peers
---
kind: Upstream
name: memory
project: peers
stdio:
  command: $node_bin
  args: ["$modules/server-memory/dist/index.js"]
  env: { MEMORY_FILE_PATH: "$data/memory.jsonl" }
---
kind: Upstream
name: everything
project: peers
stdio:
  command: $node_bin
  args: ["$modules/server-everything/dist/index.js", "stdio"]
---
kind: Upstream
name: apps
project: peers
stdio:
  command: $node_bin
  args: ["$modules/server-basic-vanillajs/dist/index.js", "--stdio"]
---
kind: Upstream
name: dual
project: peers
stdio: { command: $FIXTURE_BIN, args: ["notes", "--stdio"] }
---
kind: Upstream
name: modern
project: peers
stdio: { command: $FIXTURE_BIN, args: ["notes", "--stdio", "--only-2026"] }
---
kind: ToolPolicy
name: peers-writes
project: peers
tool: "*"
class: mutation
---
kind: ToolPolicy
name: memory-reads
project: peers
tool: memory__read_graph
class: read
---
kind: ToolPolicy
name: everything-reads
project: peers
tool: everything__echo
class: read
---
kind: ToolPolicy
name: apps-reads
project: peers
tool: apps__get-time
class: read
---
kind: ToolPolicy
name: dual-reads
project: peers
tool: dual__echo
class: read
---
kind: ToolPolicy
name: modern-reads
project: peers
tool: modern__echo
class: read
---
kind: Autonomy
subject: { user: admin }
level: 1
---
kind: User
name: approver
---
kind: Role
name: peers-approver
permissions: ["approvals:decide", "run:projects:peers"]
---
kind: RoleBinding
role: peers-approver
subject: { user: approver }
EOF

"$WARDEN_BIN" serve --data-dir "$data/wd" --listen "127.0.0.1:$port" --config "$data/peers.yaml" \
  >"$data/serve.out" 2>"$data/serve.err" &
serve_pid=$!
token=""
for _ in $(seq 1 120); do
  token="$(sed -n 's/^admin token: //p' "$data/serve.out" 2>/dev/null || true)"
  [ -n "$token" ] && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.5
done
[ -n "$token" ] || { cat "$data/serve.err" >&2; die "warden serve did not start"; }
url="$(sed -n 's/^mcp: //p' "$data/serve.out")"
base="${url%/mcp}"
all_up() {
  local inventory
  inventory="$(WARDEN_TOKEN="$token" "$WARDEN_BIN" tools inventory --server "$base" 2>/dev/null)" || return 1
  for t in memory__read_graph everything__echo apps__get-time dual__echo modern__echo; do
    grep -q "^$t " <<<"$inventory" || return 1
  done
}
for _ in $(seq 1 120); do all_up && break; sleep 0.5; done
all_up || { cat "$data/serve.err" >&2; die "the upstreams did not come up"; }

approver="$("$WARDEN_BIN" token create --user approver --data-dir "$data/wd")"
export WARDEN_URL="$url" WARDEN_TOKEN="$token"
status=0
"$venv/bin/python" "$here/python/peers.py" || status=1
node "$here/ts/peers.mjs" || status=1

# The MCP Inspector CLI in both eras: `check NAME PATTERN ARGS…` runs it with ARGS and wants
# PATTERN in its output.
inspector="$(readlink -f "$here/peers/node_modules/.bin/mcp-inspector")"
check() {
  local name="$1" pattern="$2" out
  shift 2
  if out="$(node "$inspector" --cli "$url" --transport http \
    --header "Authorization: Bearer $token" "$@" 2>&1)" && grep -q -- "$pattern" <<<"$out"; then
    printf '{"sdk":"inspector","check":"%s","ok":true}\n' "$name"
  else
    printf '{"sdk":"inspector","check":"%s","ok":false}\n%s\n' "$name" "$out"
    status=1
  fi
}
for era in legacy modern; do
  check "$era tools/list" '"memory__create_entities"' --protocol-era "$era" --method tools/list
  check "$era read" 'hi-from-inspector' --protocol-era "$era" --method tools/call \
    --tool-name everything__echo --tool-arg message=hi-from-inspector
  check "$era app" 'ui://get-time/mcp-app.html' --protocol-era "$era" --method tools/call \
    --tool-name apps__get-time --app-info
done
# Legacy: the parked call answers the decision contract, its approval id in it — also with
# the Inspector's default declaration of the (2026-07-28) tasks extension. Its default era too.
check "legacy parked" '"approvalId": "apr_' --protocol-era legacy --method tools/call \
  --tool-name dual__add_note --tool-arg text=from-inspector
check "default parked" '"approvalId": "apr_' --method tools/call \
  --tool-name dual__add_note --tool-arg text=from-inspector-default

# Modern: the Inspector declares the tasks extension, so the parked call is a task (APR-7) and
# the Inspector waits on it; an approver approves it, and the Inspector gets the tool's result.
pending() {
  curl -s -H "Authorization: Bearer $approver" "$base/api/v1/approvals?status=pending" |
    python3 -c 'import json,sys; print("\n".join(sorted(a["id"] for a in json.load(sys.stdin))))'
}
before="$(pending)"
node "$inspector" --cli "$url" --transport http --header "Authorization: Bearer $token" \
  --protocol-era modern --method tools/call --tool-name dual__add_note \
  --tool-arg text=from-inspector-task >"$data/task.out" 2>&1 &
task_pid=$!
id=""
for _ in $(seq 1 60); do
  id="$(comm -13 <(echo "$before") <(pending) | sed -n 1p)"
  [ -n "$id" ] && break
  sleep 0.5
done
if [ -n "$id" ] && curl -sf -X POST -H "Authorization: Bearer $approver" \
  -H 'content-type: application/json' -d '{"reason":"peers.sh"}' \
  "$base/api/v1/approvals/$id/approve" >/dev/null; then
  for _ in $(seq 1 60); do kill -0 "$task_pid" 2>/dev/null || break; sleep 0.5; done
fi
if ! kill -0 "$task_pid" 2>/dev/null && wait "$task_pid" && grep -q '"content"' "$data/task.out" &&
  ! grep -q 'pending_approval' "$data/task.out"; then
  printf '{"sdk":"inspector","check":"modern parked as a task, approved, result","ok":true,"task":"%s"}\n' "$id"
else
  kill "$task_pid" 2>/dev/null || true
  printf '{"sdk":"inspector","check":"modern parked as a task, approved, result","ok":false,"task":"%s"}\n' "$id"
  cat "$data/task.out"
  status=1
fi
exit "$status"
