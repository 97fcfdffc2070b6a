#!/usr/bin/env bash
# Runs the official MCP conformance suite (server scenarios, `--suite all`) against Warden's
# conformance fixture (`warden conformance-fixture`) on a free 127.0.0.1 port.
#
# Usage: tests/conformance/run-fixture.sh [suite options…]
#   With no options, runs `--suite all`; otherwise the options replace it
#   (e.g. `--scenario tools-call-sampling`, `--suite active`, `--verbose`).
#
# Environment:
#   WARDEN_BIN        a built `warden` binary (default: `cargo build -p warden` and use it)
#   CARGO_TARGET_DIR  where cargo builds (default: the workspace's `target/`)
#   NODE_BIN_DIR      a directory holding Node ≥ 22 (`node`, `npx`), put first on PATH
#   RESULTS_DIR       where the suite writes per-scenario checks.json
#                     (default: a fresh temporary directory, printed at the end)
#
# Exit status: the suite's (non-zero when any check failed), or 2 when setup failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

die() {
	echo "run-fixture: $*" >&2
	exit 2
}

if [[ -n "${NODE_BIN_DIR:-}" ]]; then
	PATH="$NODE_BIN_DIR:$PATH"
fi
command -v node >/dev/null || die "node not found (need Node >= 22; set NODE_BIN_DIR)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if ((node_major < 22)); then
	die "Node $(node --version) is too old: the conformance suite needs Node >= 22.
  e.g. mkdir -p /tmp/node22 && (cd /tmp/node22 && npm install node@22)
       NODE_BIN_DIR=/tmp/node22/node_modules/.bin $0"
fi

# The suite, pinned by package-lock.json.
if [[ ! -x "$here/node_modules/.bin/conformance" ]]; then
	echo "run-fixture: installing the conformance suite (npm ci)…" >&2
	(cd "$here" && npm ci --no-audit --no-fund >&2) || die "npm ci failed"
fi
suite="$here/node_modules/.bin/conformance"

# The fixture.
if [[ -z "${WARDEN_BIN:-}" ]]; then
	echo "run-fixture: building warden…" >&2
	(cd "$root" && cargo build -p warden >&2) || die "cargo build failed"
	WARDEN_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/warden"
fi
[[ -x "$WARDEN_BIN" ]] || die "no warden binary at $WARDEN_BIN"

work="$(mktemp -d)"
results="${RESULTS_DIR:-$work/results}"
mkdir -p "$results"
fixture_pid=""
cleanup() {
	if [[ -n "$fixture_pid" ]] && kill -0 "$fixture_pid" 2>/dev/null; then
		kill "$fixture_pid" 2>/dev/null || true
		wait "$fixture_pid" 2>/dev/null || true
	fi
	rm -f "$work/fixture.out"
}
trap cleanup EXIT

# Port 0: the kernel picks a free port; the fixture prints the address it bound.
"$WARDEN_BIN" conformance-fixture --listen 127.0.0.1:0 >"$work/fixture.out" 2>"$work/fixture.err" &
fixture_pid=$!
url=""
for _ in $(seq 1 100); do
	url="$(sed -n 's/^mcp: \(http:\/\/127\.0\.0\.1:[0-9]*\/mcp\)$/\1/p' "$work/fixture.out" | head -n1)"
	[[ -n "$url" ]] && break
	kill -0 "$fixture_pid" 2>/dev/null || {
		cat "$work/fixture.err" >&2
		die "the fixture exited early"
	}
	sleep 0.1
done
[[ -n "$url" ]] || die "the fixture did not report its address"
echo "run-fixture: fixture (pid $fixture_pid) at $url" >&2

args=("$@")
if ((${#args[@]} == 0)); then
	args=(--suite all)
fi

status=0
"$suite" server --url "$url" --output-dir "$results" "${args[@]}" || status=$?

echo
echo "run-fixture: suite exit status $status; per-scenario checks in $results"
echo "run-fixture: fixture log in $work/fixture.err"
exit "$status"
