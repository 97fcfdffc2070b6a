#!/usr/bin/env bash
# Runs an official MCP conformance suite (server scenarios) against Warden's conformance
# fixture alone, or against Warden in front of that fixture (XPORT-4).
#
# Usage: tests/conformance/run.sh fixture|gateway|both [suite options…]
#   fixture  the suite talks to `warden_fixture conformance` directly
#   gateway  the suite talks to `warden serve` (an upstream `conf` pointing at the fixture),
#            through auth-proxy.mjs, which adds the bearer token the suite cannot send
#   both     fixture, then gateway once per era in PINS, then a check that every scenario
#            that passed against the fixture passes through Warden
#   With no suite options, runs `--suite all` (0.1.16) or `--requirements 2026-07-28`
#   (0.2.0-alpha.12); otherwise the options replace it (e.g. `--scenario tools-call-sampling`,
#   `--verbose`, `--requirements 2025-11-25`).
#
# Environment:
#   SUITE             0.1.16 (default) or 0.2.0-alpha.12 — both pinned by package-lock.json
#   PINS              the upstream's `protocol:` in each gateway run: `unpinned` (Warden
#                     negotiates, as a user gets by default) or an era; default for `gateway`:
#                     `unpinned`, for `both`: `unpinned 2025-11-25`
#   WARDEN_BIN        a built `warden` binary (default: `cargo build -p warden` and use it)
#   FIXTURE_BIN       a built `warden_fixture` binary (default: next to WARDEN_BIN; built with
#                     it when WARDEN_BIN is not set)
#   FIXTURE_ARGS      more options of `warden_fixture conformance`, e.g. `--asks-on-session`
#                     (a server whose tools ask the client only through a session's peer)
#   CARGO_TARGET_DIR  where cargo builds (default: the workspace's `target/`)
#   NODE_BIN_DIR      a directory holding Node ≥ 22 (`node`, `npx`), put first on PATH
#   NODE22_PREFIX     where to install node@22 from npm when no Node ≥ 22 is found
#                     (default: tests/conformance/.node22)
#   KNOWN_GAPS        `both`: lines `PIN SCENARIO` — scenarios known to pass against the fixture
#                     and fail through Warden with that upstream pin; reported, not failed
#   RESULTS_DIR       where the suite writes per-scenario checks.json (default: a fresh
#                     temporary directory, printed at the end); `both` uses subdirectories
#
# Exit status: 0 when every scenario passed (for `both`: when every scenario that passed
# against the fixture also passed through Warden), 1 when not, 2 when setup failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

die() {
	echo "conformance: $*" >&2
	exit 2
}

mode="${1:-}"
case "$mode" in
fixture | gateway | both) shift ;;
*) die "usage: $0 fixture|gateway|both [suite options…]" ;;
esac

# npm 11.19 and later run a dependency's install scripts only where the project allows them,
# and the `node` package's preinstall script is what fetches Node: a package.json of the
# install directory allows it (older npm ignores the field). What an earlier install left
# without Node goes first, or npm would find nothing to do.
allow_node_scripts() {
	rm -rf node_modules package-lock.json
	printf '{"private": true, "allowScripts": {"node": true}}\n' >package.json
}
# Node ≥ 22: NODE_BIN_DIR, else the `node` on PATH, else one installed from npm (`node@22`)
# into NODE22_PREFIX (default: tests/conformance/.node22, ignored by git) and reused.
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [[ -n "${NODE_BIN_DIR:-}" ]]; then
	PATH="$NODE_BIN_DIR:$PATH"
fi
if (($(node_major) < 22)); then
	prefix="${NODE22_PREFIX:-$here/.node22}"
	if [[ ! -x "$prefix/node_modules/.bin/node" ]]; then
		command -v npm >/dev/null || die "need Node >= 22, or npm to install it"
		echo "conformance: Node >= 22 needed; installing node@22 into $prefix…" >&2
		mkdir -p "$prefix"
		(cd "$prefix" && allow_node_scripts && npm install --no-audit --no-fund --no-save node@22 >&2) ||
			die "npm install node@22 failed"
	fi
	PATH="$prefix/node_modules/.bin:$PATH"
	(($(node_major) >= 22)) || die "Node >= 22 not found (set NODE_BIN_DIR)"
fi

# The suites, pinned by package-lock.json.
if [[ ! -f "$here/node_modules/conformance-next/dist/index.js" ]]; then
	echo "conformance: installing the suites (npm ci)…" >&2
	(cd "$here" && npm ci --no-audit --no-fund >&2) || die "npm ci failed"
fi
case "${SUITE:-0.1.16}" in
0.1.16) suite=(node "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js") ;;
0.2.0-alpha.12) suite=(node "$here/node_modules/conformance-next/dist/index.js") ;;
*) die "SUITE must be 0.1.16 or 0.2.0-alpha.12" ;;
esac

if [[ -z "${WARDEN_BIN:-}" ]]; then
	echo "conformance: building warden…" >&2
	(cd "$root" && cargo build -p warden -p warden-testkit >&2) || die "cargo build failed"
	WARDEN_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/warden"
fi
FIXTURE_BIN="${FIXTURE_BIN:-$(dirname "$WARDEN_BIN")/warden_fixture}"
[[ -x "$WARDEN_BIN" ]] || die "no warden binary at $WARDEN_BIN"
[[ -x "$FIXTURE_BIN" ]] || die "no warden_fixture binary at $FIXTURE_BIN (cargo build -p warden-testkit)"

work="$(mktemp -d)"
results="${RESULTS_DIR:-$work/results}"
mkdir -p "$results"
pids=()
remove_work=0
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if ((remove_work)); then rm -rf "$work"; fi
}
trap cleanup EXIT

# wait_for FILE SED_EXPR PID: prints the first line of FILE matched by SED_EXPR, once it appears.
wait_for() {
	local file="$1" expr="$2" pid="$3" value=""
	for _ in $(seq 1 300); do
		value="$(sed -n "$expr" "$file" | sed -n 1p)"
		[[ -n "$value" ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "$value"
}

suite_args=("$@")
if ((${#suite_args[@]} == 0)); then
	case "${SUITE:-0.1.16}" in
	0.1.16) suite_args=(--suite all) ;;
	*) suite_args=(--requirements 2026-07-28) ;;
	esac
fi

# Port 0: the kernel picks a free port; the fixture prints the address it bound.
# shellcheck disable=SC2086 # FIXTURE_ARGS is a list of options
"$FIXTURE_BIN" conformance --listen 127.0.0.1:0 ${FIXTURE_ARGS:-} >"$work/fixture.out" 2>"$work/fixture.err" &
pids+=($!)
fixture_url="$(wait_for "$work/fixture.out" 's/^mcp: \(http:\/\/127\.0\.0\.1:[0-9]*\/mcp\)$/\1/p' "${pids[-1]}")"
[[ -n "$fixture_url" ]] || {
	cat "$work/fixture.err" >&2
	die "the fixture did not report its address"
}
echo "conformance: fixture at $fixture_url" >&2

# start_gateway PIN: a fresh embedded Warden in front of the fixture; sets gateway_url.
start_gateway() {
	# One project, one upstream (the fixture, no name prefix; its era negotiated unless PIN
	# names one), every tool an ordinary mutation, which the default autonomy (L2) runs — the
	# governed write path, not a bypass.
	local pin="$1" protocol="" data="$work/data-$1"
	[[ "$pin" == unpinned ]] || protocol="protocol: \"$pin\""
	cat >"$work/conf-$pin.yaml" <<YAML
kind: Project
name: conf
---
kind: Upstream
name: conf
project: conf
prefix: ""
$protocol
http:
  url: $fixture_url
---
kind: ToolPolicy
name: conf-all
project: conf
tool: "*"
class: mutation
risk: ordinary
YAML
	"$WARDEN_BIN" serve --no-demo --data-dir "$data" --listen 127.0.0.1:0 \
		--config "$work/conf-$pin.yaml" >"$work/serve-$pin.out" 2>"$work/serve-$pin.err" &
	pids+=($!)
	local serve_pid="${pids[-1]}"
	token="$(wait_for "$work/serve-$pin.out" 's/^admin token: //p' "$serve_pid")"
	serve_url="$(wait_for "$work/serve-$pin.out" 's/^mcp: //p' "$serve_pid")"
	[[ -n "$token" && -n "$serve_url" ]] || {
		cat "$work/serve-$pin.err" >&2
		die "warden serve did not start"
	}
	local origin="${serve_url%/mcp}"
	# Wait until the fixture's tools are in the catalog.
	for _ in $(seq 1 100); do
		WARDEN_TOKEN="$token" "$WARDEN_BIN" tools inventory --server "$origin" 2>/dev/null |
			grep -q '^test_simple_text ' && break
		sleep 0.1
	done
	WARDEN_TOKEN="$token" node "$here/auth-proxy.mjs" "$origin" >"$work/proxy-$pin.out" 2>"$work/proxy-$pin.err" &
	pids+=($!)
	local proxy
	proxy="$(wait_for "$work/proxy-$pin.out" 's/^proxy: //p' "${pids[-1]}")"
	[[ -n "$proxy" ]] || {
		cat "$work/proxy-$pin.err" >&2
		die "the auth proxy did not start"
	}
	gateway_url="$proxy/mcp"
	echo "conformance: warden ($pin upstream) at $serve_url, through the auth proxy at $gateway_url" >&2
}

# run_suite URL DIR: runs the suite, leaves its output in DIR/suite.log, returns its status.
run_suite() {
	mkdir -p "$2"
	local status=0
	"${suite[@]}" server --url "$1" --output-dir "$2" "${suite_args[@]}" >"$2/suite.log" 2>&1 || status=$?
	cat "$2/suite.log"
	return "$status"
}

# verdicts DIR: one line per scenario, `name ✓|✗`, from the suite's summary.
verdicts() {
	sed -n 's/^\([✓✗]\) \([a-z0-9-]*\):.*$/\2 \1/p' "$1/suite.log" | sort
}

# passed DIR: the scenarios that passed, one per line.
passed() {
	verdicts "$1" | sed -n 's/ ✓$//p'
}

status=0
case "$mode" in
fixture)
	run_suite "$fixture_url" "$results" || status=$?
	;;
gateway)
	for pin in ${PINS:-unpinned}; do
		start_gateway "$pin"
		run_suite "$gateway_url" "$results/gateway-$pin" || status=$?
	done
	;;
both)
	run_suite "$fixture_url" "$results/fixture" || true
	if [[ -z "$(verdicts "$results/fixture")" ]]; then
		echo "conformance: no scenario verdicts found in the suite's output" >&2
		status=1
	fi
	for pin in ${PINS:-unpinned 2025-11-25}; do
		start_gateway "$pin"
		run_suite "$gateway_url" "$results/gateway-$pin" || true
		known="$(printf '%s\n' "${KNOWN_GAPS:-}" | sed -n "s/^$pin //p" | sort)"
		lost="$(comm -23 <(passed "$results/fixture") <(passed "$results/gateway-$pin") |
			comm -23 - <(echo "$known"))"
		gaps="$(comm -23 <(passed "$results/fixture") <(passed "$results/gateway-$pin") |
			comm -12 - <(echo "$known"))"
		if [[ -n "$gaps" ]]; then
			echo "conformance: known gaps ($pin upstream, KNOWN_GAPS): $(echo $gaps)"
		fi
		if [[ -n "$lost" ]]; then
			echo "conformance: passed against the fixture, failed through warden ($pin upstream):" >&2
			echo "$lost" | sed 's/^/  /' >&2
			status=1
		else
			echo "conformance: $(passed "$results/fixture" | wc -l) of $(verdicts "$results/fixture" | wc -l) scenarios pass against the fixture; through warden ($pin upstream) all of them do but $(echo "$gaps" | grep -c .) known gaps"
		fi
	done
	;;
esac

echo
if [[ "$status" != 0 || -n "${RESULTS_DIR:-}" ]]; then
	echo "conformance: exit status $status; per-scenario checks in $results"
	echo "conformance: logs in $work"
else
	remove_work=1
fi
exit "$status"
