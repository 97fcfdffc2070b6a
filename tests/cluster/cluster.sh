#!/usr/bin/env bash
# A real cluster (STORE-3, issue 33): three `warden serve` replicas on one PostgreSQL database,
# behind HAProxy (round-robin, no stickiness: every request goes wherever it is sent). Then:
#
#   1. sessions: the official Python SDK (`mode="legacy"`, a 2025-11-25 session, and
#      `mode="auto"`) and the TypeScript SDK (2025-11-25) each list, read, write, park a
#      dangerous call, have it approved and fetch its outcome, all through the balancer
#      (tests/interop/python/cluster.py, tests/interop/ts/cluster.mjs); each replica's own
#      /metrics shows it served requests of each client;
#   2. a replica killed under load: 64 writers call an ordinary mutation through the balancer
#      for LOAD_SECONDS, half as `writer`, who has a write budget of BUDGET a minute, half as
#      `bulk`, who has none; after KILL_AFTER seconds one replica gets `kill -9` and the load
#      goes on. Then every acknowledged answer has its records in the audit trail (nothing
#      acknowledged is lost), no minute admitted more of `writer`'s writes than the budget,
#      the other replicas answered after the kill (`bulk`'s writes went on executing), and
#      `warden audit verify` passes; and a Python SDK 2025-11-25 session reading through the
#      kill goes on, on the replicas left;
#   3. `warden audit verify` runs VERIFY_RUNS times while 64 writers keep the two replicas
#      left appending: no false alarm.
#
# Figures go to stdout (one JSON line per phase); exit 1 on the first violation.
#
#   WARDEN_BIN                the warden binary (default: <repo>/target/debug/warden)
#   WARDEN_TEST_POSTGRES_URL  a PostgreSQL server's URL; the script creates a database of its
#                             own on that server and drops it at the end
#   INTEROP_VENV              Python venv with tests/interop/python/requirements.txt (created
#                             if missing)
#   LOAD_SECONDS, KILL_AFTER, BUDGET, VERIFY_RUNS   (default 8, 3, 200, 50)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
WARDEN_BIN="${WARDEN_BIN:-$repo/target/debug/warden}"
venv="${INTEROP_VENV:-/tmp/warden-interop-venv}"
load_seconds="${LOAD_SECONDS:-8}"
verify_runs="${VERIFY_RUNS:-50}"
kill_after="${KILL_AFTER:-3}"
budget="${BUDGET:-200}"

die() { echo "cluster.sh: $*" >&2; exit 2; }
[ -x "$WARDEN_BIN" ] || die "no warden binary at $WARDEN_BIN"
[ -n "${WARDEN_TEST_POSTGRES_URL:-}" ] || die "WARDEN_TEST_POSTGRES_URL is required"
command -v haproxy >/dev/null || die "haproxy is required (Debian: apt-get install haproxy)"
command -v psql >/dev/null || die "psql is required"
[ -d "$repo/tests/interop/ts/node_modules/@modelcontextprotocol/sdk" ] ||
  (cd "$repo/tests/interop/ts" && npm ci --no-audit --no-fund --silent) || die "npm ci (ts) failed"
bash "$repo/tests/interop/venv.sh" "$venv"

work="$(mktemp -d "${TMPDIR:-/tmp}/warden-cluster.XXXXXX")"
db="warden_cluster_$$"
server_url="${WARDEN_TEST_POSTGRES_URL%/*}"
url="$server_url/$db"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  psql "$pg" -qAt -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  if [ "${keep:-0}" = 1 ]; then echo "cluster.sh: work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { keep=1; echo "cluster.sh: $*" >&2; for f in "$work"/r*.err "$work"/haproxy.err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done; exit 1; }

pg="$WARDEN_TEST_POSTGRES_URL"
warden="$WARDEN_BIN"
psql "$pg" -qAt -c "CREATE DATABASE $db" >/dev/null
# Nothing of the caller's environment configures the replicas or the CLI.
unset "${!WARDEN_@}"
export WARDEN_LOG=warn XDG_DATA_HOME="$work/xdg"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ports=("$(free_port)" "$(free_port)" "$(free_port)")
lb="$(free_port)"

# Two notes tool sets (this very binary's `demo-server`, one child per replica): `notes` for
# reads and ordinary writes, `vault` whose writes are dangerous (parked for approval).
cat >"$work/cluster.yaml" <<EOF
kind: Project
name: shop
---
kind: Upstream
name: notes
project: shop
stdio: { command: "$warden", args: ["demo-server"] }
---
kind: Upstream
name: vault
project: shop
stdio: { command: "$warden", args: ["demo-server"] }
---
kind: ToolPolicy
project: shop
tool: notes__add_note
class: mutation
risk: ordinary
---
kind: ToolPolicy
project: shop
tool: vault__add_note
class: mutation
risk: dangerous
---
kind: User
name: writer
---
kind: User
name: approver
---
kind: User
name: alice
---
kind: User
name: bulk
---
kind: Role
name: shopper
permissions: ["run:projects:shop"]
---
kind: Role
name: decider
permissions: ["run:projects:shop", "approvals:decide"]
---
kind: RoleBinding
role: shopper
subject: { user: writer }
---
kind: RoleBinding
role: shopper
subject: { user: alice }
---
kind: RoleBinding
role: shopper
subject: { user: bulk }
---
kind: RoleBinding
role: decider
subject: { user: approver }
---
kind: WriteBudget
subject: { user: writer }
maxWritesPerMinute: $budget
EOF

# One audit key for every replica, as a deployment gives each the same key file.
start_replica() {
  local i="$1"
  "$warden" serve --database-url "$url" --listen "127.0.0.1:${ports[$i]}" --no-demo \
    --audit-key "$work/audit.key" "${@:2}" >"$work/r$i.out" 2>"$work/r$i.err" &
  pids+=($!)
  replica_pid[$i]=$!
}
declare -A replica_pid
start_replica 0 --config "$work/cluster.yaml"
admin=""
for _ in $(seq 1 240); do
  admin="$(sed -n 's/^admin token: //p' "$work/r0.out" 2>/dev/null || true)"
  [ -n "$admin" ] && break
  kill -0 "${replica_pid[0]}" 2>/dev/null || break
  sleep 0.25
done
[ -n "$admin" ] || fail "the first replica printed no admin token"
start_replica 1
start_replica 2
ready() {
  local inventory
  inventory="$(WARDEN_TOKEN="$admin" "$warden" tools inventory --server "http://127.0.0.1:$1" 2>/dev/null)" || return 1
  grep -q '^notes__add_note ' <<<"$inventory" && grep -q '^vault__add_note ' <<<"$inventory"
}
for i in 0 1 2; do
  for _ in $(seq 1 240); do ready "${ports[$i]}" && break; sleep 0.25; done
  ready "${ports[$i]}" || fail "replica $i did not come up with its upstreams"
done

cat >"$work/haproxy.cfg" <<EOF
global
  maxconn 4096
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout tunnel 1h
  option redispatch
  retries 2
frontend warden
  bind 127.0.0.1:$lb
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
  http-check expect status 200
  default-server check inter 300ms fall 1 rise 2
  server r0 127.0.0.1:${ports[0]}
  server r1 127.0.0.1:${ports[1]}
  server r2 127.0.0.1:${ports[2]}
EOF
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.out" 2>"$work/haproxy.err" &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$lb/healthz" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$lb"

approver="$("$warden" token create --user approver --database-url "$url" 2>/dev/null)"
writer="$("$warden" token create --user writer --database-url "$url" 2>/dev/null)"
bulk="$("$warden" token create --user bulk --database-url "$url" 2>/dev/null)"
client="$("$warden" token create --user alice --database-url "$url" 2>/dev/null)"

# MCP requests each replica has served (its own /metrics, not through the balancer).
served() {
  curl -sf -H "Authorization: Bearer $admin" "http://127.0.0.1:$1/metrics" |
    awk '/^warden_mcp_requests_total/ { n += $NF } END { print n + 0 }'
}
spread() {
  local name="$1"
  shift
  local before=() after=() i
  for i in 0 1 2; do before[$i]="$(served "${ports[$i]}")"; done
  "$@" || fail "$name failed through the balancer"
  for i in 0 1 2; do after[$i]="$(served "${ports[$i]}")"; done
  local counts="[$((after[0] - before[0])), $((after[1] - before[1])), $((after[2] - before[2]))]"
  printf '{"phase":"sessions","client":"%s","requests per replica":%s}\n' "$name" "$counts"
  for i in 0 1 2; do
    [ $((after[i] - before[i])) -gt 0 ] || fail "$name: replica $i served none of its requests: $counts"
  done
}
export WARDEN_URL="$base/mcp" WARDEN_TOKEN="$client" APPROVER_TOKEN="$approver"
spread "python legacy" "$venv/bin/python" "$repo/tests/interop/python/cluster.py" legacy
spread "python auto" "$venv/bin/python" "$repo/tests/interop/python/cluster.py" auto
spread "typescript" node "$repo/tests/interop/ts/cluster.mjs"

# A replica killed under load. The load stays inside one budget minute: it waits for the
# next minute when too little of this one is left.
second=$((10#$(date +%S)))
if [ $((second + load_seconds + 5)) -ge 60 ]; then sleep $((61 - second)); fi
: >"$work/acks"
# A backstop: the session bounds its own waits; a hang must fail the test, not stall it.
timeout 180 "$venv/bin/python" "$repo/tests/interop/python/cluster.py" across "$work/stop" "$work/killed" >"$work/across.out" &
session=$!
for _ in $(seq 1 300); do [ -e "$work/stop.ready" ] && break; sleep 0.1; done
[ -e "$work/stop.ready" ] || { cat "$work/across.out"; fail "the 2025-11-25 session did not start"; }
"$venv/bin/python" "$here/load.py" "$base" "$work/acks" "$work/stop" "$writer" "$bulk" &
load=$!
sleep "$kill_after"
killed_at="$(date +%s%3N)"
kill -9 "${replica_pid[1]}"
wait "${replica_pid[1]}" 2>/dev/null || true
touch "$work/killed"
sleep $((load_seconds - kill_after))
touch "$work/stop"
wait "$load" || fail "the load generator failed"
wait "$session" || { cat "$work/across.out"; fail "the 2025-11-25 session did not go on after the kill"; }
cat "$work/across.out"
"$warden" audit --database-url "$url" --limit 100000000 -o json >"$work/audit.jsonl"
python3 "$here/check.py" "$work/acks" "$work/audit.jsonl" "$budget" "$killed_at" || fail "a violation after kill -9"
"$warden" audit verify --database-url "$url" --audit-key "$work/audit.key" >"$work/verify.out" 2>&1 ||
  { cat "$work/verify.out" >&2; fail "audit verify failed"; }
printf '{"phase":"verify","result":"%s"}\n' "$(head -n 1 "$work/verify.out")"

# `warden audit verify` VERIFY_RUNS times while the two replicas left append: never a false
# alarm. The writers pause between calls, so that the trail each run reads in full stays short.
rm -f "$work/stop"
: >"$work/acks-verify"
PAUSE=1 "$venv/bin/python" "$here/load.py" "$base" "$work/acks-verify" "$work/stop" "$bulk" >/dev/null &
load=$!
alarms=0
for run in $(seq 1 "$verify_runs"); do
  "$warden" audit verify --database-url "$url" --audit-key "$work/audit.key" >"$work/verify-$run.out" 2>&1 ||
    { alarms=$((alarms + 1)); cat "$work/verify-$run.out" >&2; }
done
touch "$work/stop"
wait "$load" || fail "the load generator failed"
appended="$(wc -l <"$work/acks-verify")"
printf '{"phase":"verify during the load","runs":%d,"false alarms":%d,"calls answered meanwhile":%d}\n' \
  "$verify_runs" "$alarms" "$appended"
[ "$alarms" -eq 0 ] || fail "audit verify raised $alarms false alarms while the replicas appended"
[ "$appended" -gt 0 ] || fail "no call was answered while audit verify ran"
