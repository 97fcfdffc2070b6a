#!/usr/bin/env bash
# Crash torture (REL-3): `scripts/torture.sh [N]` (default 20).
#
# N times: start `warden serve` on one embedded store, drive concurrent mutations and approvals
# at it, and `kill -9` it at a random moment (0.05–1.5 s in). The next start recovers the store
# (the audit spool's replay, crash reconciliation). At the end, and every 100 rounds, it checks:
#
#   - every acknowledged call — a mutation answered `executed`, an approval answered `executed`
#     — has its call and outcome records in the audit trail;
#   - no action ran twice: each note (one per call, unique text) is on file at most once, and
#     exactly once for every acknowledged execution;
#   - `warden audit verify` passes (chain and signed checkpoints).
#
# Figures go to stdout; exit 1 on the first violation, with the round and the work directory
# kept for a look. Builds the `dev` binaries unless WARDEN_BIN_DIR names a directory holding
# `warden` and `warden_fixture`.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-20}"
case "$rounds" in '' | *[!0-9]*) echo "usage: scripts/torture.sh [N]  (N: rounds, a number)" >&2; exit 2 ;; esac

if [ -z "${WARDEN_BIN_DIR:-}" ]; then
    cargo build --quiet -p warden -p warden-testkit --bins
    WARDEN_BIN_DIR="${CARGO_TARGET_DIR:-target}/debug"
fi
warden="$WARDEN_BIN_DIR/warden"
fixture="$WARDEN_BIN_DIR/warden_fixture"
[ -x "$warden" ] && [ -x "$fixture" ] || { echo "no warden / warden_fixture in $WARDEN_BIN_DIR" >&2; exit 2; }
warden="$(cd "$(dirname "$warden")" && pwd)/warden"
fixture="$(cd "$(dirname "$fixture")" && pwd)/warden_fixture"

work="$(mktemp -d "${TMPDIR:-/tmp}/warden-torture.XXXXXX")"
data="$work/data"
mkdir -p "$data"
unset "${!WARDEN_@}"
# A round that fails leaves its work directory for a look, never its server running.
pid=""
# Under errexit a failing kill (its server already gone) would be the script's exit status.
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi' EXIT
export WARDEN_LOG=error

# Two upstreams, each a notes server writing its notes to a file: `ledger__add_note` is an
# ordinary mutation (executed at once), `vault__add_note` a dangerous one (parked for approval).
cat >"$work/warden.yaml" <<EOF
kind: Project
name: payments
---
kind: Upstream
name: ledger
project: payments
stdio: { command: "$fixture", args: ["notes", "--stdio", "--file", "$work/ledger.json"] }
---
kind: Upstream
name: vault
project: payments
stdio: { command: "$fixture", args: ["notes", "--stdio", "--file", "$work/vault.json"] }
---
kind: ToolPolicy
project: payments
tool: ledger__add_note
class: mutation
risk: ordinary
---
kind: ToolPolicy
project: payments
tool: vault__add_note
class: mutation
risk: dangerous
---
kind: User
name: alice
---
kind: User
name: bob
---
kind: Role
name: writer
permissions: ["run:projects:payments"]
---
kind: Role
name: approver
permissions: ["approvals:decide"]
---
kind: RoleBinding
role: writer
subject: { user: alice }
---
kind: RoleBinding
role: writer
subject: { user: bob }
---
kind: RoleBinding
role: approver
subject: { user: bob }
EOF

"$warden" apply -f "$work/warden.yaml" --data-dir "$data" >/dev/null
alice="$("$warden" token create --user alice --data-dir "$data")"
bob="$("$warden" token create --user bob --data-dir "$data")"
: >"$work/acks"

# The load: four writers calling ledger__add_note, one parking vault__add_note calls and
# approving them, until the server is gone. Only complete answers are written to the log.
cat >"$work/drive.py" <<'EOF'
import json, sys, threading, urllib.request

base, alice, bob, round_, acks_path = sys.argv[1:6]
lock = threading.Lock()
acks = open(acks_path, "a")

def ack(line):
    with lock:
        acks.write(line + "\n")
        acks.flush()

def post(path, token, body, headers=None):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("authorization", "Bearer " + token)
    request.add_header("content-type", "application/json")
    request.add_header("accept", "application/json, text/event-stream")
    for k, v in (headers or {}).items():
        request.add_header(k, v)
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    if text.startswith("{"):
        return json.loads(text)
    data = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
    return json.loads(data[-1])

def call(token, tool, arguments, n):
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "torture", "version": "1"}}}}
    answer = post("/mcp", token, body, {"mcp-protocol-version": "2026-07-28",
                                          "mcp-method": "tools/call", "mcp-name": tool})
    return answer["result"]["_meta"]["warden/decision"]

def writer(w):
    n = 0
    while True:
        n += 1
        text = f"r{round_}-w{w}-{n}"
        try:
            d = call(alice, "ledger__add_note", {"text": text}, n)
        except Exception:
            return
        ack(f"ledger {text} {d['status']}")

def approver():
    n = 0
    while True:
        n += 1
        text = f"r{round_}-a-{n}"
        try:
            d = call(alice, "vault__add_note", {"text": text}, n)
            if d["status"] != "pending_approval":
                ack(f"vault-park {text} {d['status']}")
                continue
            a = post(f"/api/v1/approvals/{d['approvalId']}/approve", bob, {"reason": "torture"})
        except Exception:
            return
        ack(f"vault {text} {a.get('status')}")

threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
threads.append(threading.Thread(target=approver))
for t in threads:
    t.start()
for t in threads:
    t.join()
EOF

cat >"$work/check.py" <<'EOF'
import collections, json, sys

work, audit_path = sys.argv[1:3]
acks = [l.split() for l in open(f"{work}/acks") if l.strip()]
records = [json.loads(l) for l in open(audit_path) if l.strip()]
calls = {}
outcomes = {}
for r in records:
    if r.get("kind") == "call":
        args = (r.get("payload") or {}).get("args")
        if isinstance(args, dict) and "text" in args:
            calls.setdefault(args["text"], []).append(r.get("call_id"))
    elif r.get("kind") == "outcome":
        outcomes.setdefault(r.get("call_id"), []).append(r.get("decision"))

def notes(name):
    try:
        return collections.Counter(n["text"] for n in json.load(open(f"{work}/{name}.json")))
    except FileNotFoundError:
        return collections.Counter()

on_file = {"ledger": notes("ledger"), "vault": notes("vault")}
problems = []
for name, counter in on_file.items():
    for text, count in counter.items():
        if count > 1:
            problems.append(f"{name}: {text!r} executed {count} times")
executed = collections.Counter()
for tool, text, status in acks:
    if tool == "vault-park":
        problems.append(f"vault__add_note {text} was not parked: {status}")
        continue
    if status != "executed":
        continue
    executed[tool] += 1
    if on_file[tool][text] != 1:
        problems.append(f"{tool}: acknowledged {text!r} is on file {on_file[tool][text]} times")
    if text not in calls:
        problems.append(f"{tool}: acknowledged {text!r} has no call record")
    elif not any("executed" in outcomes.get(c, []) for c in calls[text]):
        problems.append(f"{tool}: acknowledged {text!r} has no executed outcome record")
print(json.dumps({"acknowledged": dict(executed), "records": len(records),
                  "notes": {k: sum(v.values()) for k, v in on_file.items()},
                  "problems": len(problems)}))
for p in problems[:20]:
    print("PROBLEM:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF

check() {
    "$warden" audit --limit 100000000 -o json --data-dir "$data" >"$work/audit.jsonl"
    python3 "$work/check.py" "$work" "$work/audit.jsonl" || { echo "round $1: violation (work dir kept: $work)" >&2; exit 1; }
    "$warden" audit verify --data-dir "$data" >"$work/verify.out" 2>&1 \
        || { cat "$work/verify.out" >&2; echo "round $1: audit verify failed (work dir kept: $work)" >&2; exit 1; }
}

start=$(date +%s)
for round in $(seq 1 "$rounds"); do
    "$warden" serve --listen 127.0.0.1:0 --no-demo --data-dir "$data" >"$work/serve.out" 2>>"$work/serve.err" &
    pid=$!
    # Up to a minute: a start after kill -9 replays the spool, and a busy machine is slow.
    base=""
    for _ in $(seq 1 1200); do
        base="$(sed -n 's|^mcp: \(.*\)/mcp$|\1|p' "$work/serve.out" 2>/dev/null || true)"
        [ -n "$base" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$base" ] || { cat "$work/serve.err" >&2; echo "round $round: warden did not start" >&2; exit 1; }
    python3 "$work/drive.py" "$base" "$alice" "$bob" "$round" "$work/acks" &
    driver=$!
    sleep "$(python3 -c 'import random; print(round(random.uniform(0.05, 1.5), 3))')"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    wait "$driver" || true
    if [ $((round % 100)) -eq 0 ] || [ "$round" -eq "$rounds" ]; then
        printf 'round %d/%d: ' "$round" "$rounds"
        check "$round"
    fi
done
echo "torture: $rounds kill -9 rounds in $(( $(date +%s) - start )) s; $(tail -n 1 "$work/verify.out")"
rm -rf "$work"
