#!/usr/bin/env bash
# Start a throwaway Warden on 127.0.0.1, add a second project `other`, an upstream `relay` in
# project `demo` that speaks 2025-11-25 to Warden (so its server-to-client requests are relayed
# as requests; XPORT-4) and a token bound to project `demo`, then run the Python and TypeScript
# SDK interop scripts against it.
#
#   WARDEN_BIN      the warden binary (default: <repo>/target/debug/warden)
#   FIXTURE_BIN     the test fixtures' binary, `warden_fixture` (default: next to WARDEN_BIN)
#   INTEROP_PORT    listen port (default 8650)
#   INTEROP_SDKS    comma list: python,ts (default both)
#   INTEROP_ERAS    passed through to the scripts (default: every leg)
#   INTEROP_VENV    Python venv holding python/requirements.txt (created if missing;
#                   default /tmp/warden-interop-venv)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
WARDEN_BIN="${WARDEN_BIN:-$repo/target/debug/warden}"
FIXTURE_BIN="${FIXTURE_BIN:-$(dirname "$WARDEN_BIN")/warden_fixture}"
port="${INTEROP_PORT:-8650}"
sdks="${INTEROP_SDKS:-python,ts}"
venv="${INTEROP_VENV:-/tmp/warden-interop-venv}"

[ -x "$WARDEN_BIN" ] || { echo "run.sh: no warden binary at $WARDEN_BIN (build it, or set WARDEN_BIN)" >&2; exit 2; }
[ -x "$FIXTURE_BIN" ] || { echo "run.sh: no warden_fixture binary at $FIXTURE_BIN (cargo build -p warden-testkit, or set FIXTURE_BIN)" >&2; exit 2; }

data="$(mktemp -d /tmp/warden-interop.XXXXXX)"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

"$WARDEN_BIN" serve --data-dir "$data/wd" --listen "127.0.0.1:$port" >"$data/serve.out" 2>"$data/serve.err" &
serve_pid=$!

token=""
for _ in $(seq 1 60); do
  # The background shell may not have created serve.out yet: that is "no token yet", not an
  # error (under `set -e` a failing sed here ended the whole run).
  token="$(sed -n 's/^admin token: //p' "$data/serve.out" 2>/dev/null || true)"
  [ -n "$token" ] && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.5
done
if [ -z "$token" ]; then
  echo "run.sh: warden serve did not print an admin token; its stderr:" >&2
  cat "$data/serve.err" >&2
  exit 1
fi
url="$(sed -n 's/^mcp: //p' "$data/serve.out")"

cat >"$data/other.yaml" <<EOF
kind: Project
name: other
---
kind: Upstream
name: other
project: other
stdio:
  command: $FIXTURE_BIN
  args: ["notes", "--stdio"]
---
kind: Upstream
name: relay
project: demo
protocol: "2025-11-25"
stdio:
  command: $FIXTURE_BIN
  args: ["notes", "--stdio"]
EOF
"$WARDEN_BIN" apply -f "$data/other.yaml" --data-dir "$data/wd" >/dev/null
bound="$("$WARDEN_BIN" token create --user admin --project demo --data-dir "$data/wd")"

# The hidden-tool check only means something once `other__*` tools exist, and the relay checks
# need `relay__*`: wait for both upstreams.
base="${url%/mcp}"
upstreams_up() {
  local inventory
  inventory="$(WARDEN_TOKEN="$token" "$WARDEN_BIN" tools inventory --server "$base" 2>/dev/null)" || return 1
  grep -q '^other__echo ' <<<"$inventory" && grep -q '^relay__ask ' <<<"$inventory"
}
for _ in $(seq 1 30); do
  upstreams_up && break
  sleep 0.5
done
upstreams_up || {
  echo "run.sh: upstreams \`other\` and \`relay\` did not come up; serve stderr:" >&2
  cat "$data/serve.err" >&2
  exit 1
}

# WARDEN_RELAY_PREFIX turns on the scripts' relay checks (http-2025 leg) against `relay__*`.
export WARDEN_URL="$url" WARDEN_TOKEN="$token" WARDEN_BOUND_TOKEN="$bound" WARDEN_RELAY_PREFIX=relay
export WARDEN_BIN WARDEN_DATA_DIR="$data/wd"

status=0
# How many SDK scripts run the relay checks (their http-2025 leg); each cancels one relay__slow.
relay_runs=0
eras="${INTEROP_ERAS:-}"
if [ -z "${eras// /}" ] || [[ ",${eras// /}," == *",http-2025,"* ]]; then
  [[ ",$sdks," == *",python,"* ]] && relay_runs=$((relay_runs + 1))
  [[ ",$sdks," == *",ts,"* ]] && relay_runs=$((relay_runs + 1))
fi
if [[ ",$sdks," == *",python,"* ]]; then
  bash "$here/venv.sh" "$venv"
  "$venv/bin/python" "$here/python/interop.py" || status=1
fi
if [[ ",$sdks," == *",ts,"* ]]; then
  [ -d "$here/ts/node_modules/@modelcontextprotocol/sdk" ] || (cd "$here/ts" && npm ci --no-audit --no-fund --silent)
  node "$here/ts/interop.mjs" || status=1
fi
# Every call the SDK clients made is in the audit trail with its decision.
if [ "$status" = 0 ]; then
  decisions="$("$WARDEN_BIN" audit --data-dir "$data/wd" --kind decision --limit 100000 -o json)"
  for expected in '"tool":"notes__list_notes"' '"tool":"notes__add_note"'; do
    if ! grep "$expected" <<<"$decisions" | grep '"decision":"allow"' >/dev/null; then
      echo "run.sh: no allow decision for $expected in the audit trail" >&2
      status=1
    fi
  done
  if ! grep '"tool":"notes__delete_note"' <<<"$decisions" | grep '"decision":"park"' >/dev/null; then
    echo "run.sh: the parked notes__delete_note is not in the audit trail" >&2
    status=1
  fi
  # Each relay__slow the clients cancelled has an outcome record `cancelled` (XPORT-4); the
  # outcome is written when the upstream call ends, so give it a moment.
  if [ "$relay_runs" -gt 0 ]; then
    cancelled=0
    for _ in $(seq 1 20); do
      cancelled="$("$WARDEN_BIN" audit --data-dir "$data/wd" --kind outcome --tool relay__slow --limit 100000 -o json |
        grep -c '"decision":"cancelled"' || true)"
      [ "$cancelled" -ge "$relay_runs" ] && break
      sleep 0.25
    done
    if [ "$cancelled" -ge "$relay_runs" ]; then
      echo "{\"check\":\"audit trail has the cancelled relay__slow calls\",\"ok\":true,\"cancelled\":$cancelled}"
    else
      echo "run.sh: expected $relay_runs outcome record(s) \`cancelled\` for relay__slow, found $cancelled:" >&2
      "$WARDEN_BIN" audit --data-dir "$data/wd" --kind outcome --tool relay__slow --limit 100000 -o json >&2 || true
      status=1
    fi
  fi
  "$WARDEN_BIN" audit verify --data-dir "$data/wd" >/dev/null || status=1
  [ "$status" = 0 ] && echo '{"check":"audit trail has every decision and verifies","ok":true}'
fi
exit "$status"
