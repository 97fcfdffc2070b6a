#!/usr/bin/env bash
# Reproduces the figures of docs/benchmarks.md, one scenario per invocation:
#
#   scripts/bench.sh perf1      # overhead at 1 and 64 clients, against the direct upstream
#   scripts/bench.sh perf2      # throughput at 64 clients: allowed and denied calls
#   scripts/bench.sh perf3      # tools/list over 100 projects × 100 tools, resident memory
#   scripts/bench.sh perf4 N    # audit growth: N pre-filled records (1000, 100000, 10000000)
#   scripts/bench.sh eras       # the same call in both protocol eras
#   scripts/bench.sh forward    # the floor of any proxy: `warden bench forward` (bytes copied, no
#                               # HTTP) in front of the upstream, at 1 and 64 clients, against it
#   scripts/bench.sh others     # PERF-2's other gateways: Warden, FastMCP's proxy (a fresh
#                               # upstream session per request, then one shared) and IBM's
#                               # ContextForge, each in front of the same upstream and measured
#                               # as perf1 measures Warden, in the 2025-11-25 era (installs them
#                               # into OTHERS_DIR; needs python3, curl and PyPI)
#   scripts/bench.sh soak       # 64 clients without pause for 30 s (SOAK), then the sizes of
#                               # the database, its WAL and the audit spool's files
#   scripts/bench.sh compare A B [CLIENTS] [MIX]
#                               # two builds (warden binaries A and B) alternating, round by
#                               # round, each with its own upstream and direct rounds; prints
#                               # the ratios and the CPU per call of Warden and of its upstream
#   scripts/bench.sh cpu A B [CLIENTS]
#                               # two builds alternating, ROUNDS times: each round starts a
#                               # fresh Warden and upstream per build and runs DURATION of reads
#                               # (no direct rounds); prints calls/s and Warden's CPU per call
#   scripts/bench.sh split [CLIENTS]
#                               # where the CPU of a call goes: ROUNDS rounds of DURATION, each a
#                               # governed round and a direct round (reads), with the CPU per
#                               # call of the load generator, Warden and the upstream (/proc and
#                               # bash's `time`); on shared cores throughput is the cores divided
#                               # by their sum, and at one client latency is about that sum
#   scripts/bench.sh kernel A B [CLIENTS]
#                               # two builds alternating, ROUNDS times, as `cpu`, counting what
#                               # Warden asks of the kernel per governed call with `perf stat -p`
#                               # (its threads at the start of the run): page allocations, the
#                               # system calls that write (`write` is the audit spool, `writev`
#                               # the sockets, `pwrite64` SQLite), `ftruncate`, `futex`, context
#                               # switches; figures the machine's speed does not move; needs perf
#   scripts/bench.sh stores [MIX]
#                               # the two stores of one build: ROUNDS rounds, each starting a
#                               # fresh Warden and upstream on SQLite (the embedded default) and
#                               # on PostgreSQL (a new database on WARDEN_TEST_POSTGRES_URL's
#                               # server, dropped afterwards), in alternating order, and measuring
#                               # DURATION of calls (MIX, default read=1) at 1 and at 64 clients;
#                               # prints calls/s, p50 and the PostgreSQL/SQLite ratio per round
#   scripts/bench.sh instructions A B [CALLS]
#                               # two builds under valgrind's callgrind: instructions Warden
#                               # executes per governed call (CALLS reads, 4 clients, default
#                               # 2000, after 400 unmeasured), a figure the machine's noise does
#                               # not move; needs valgrind
#   scripts/bench.sh wrk A B    # two binaries measured from outside with wrk, as issue 42 did:
#                               # a stateless 2026-07-28 tools/call of bench__read, 2 threads
#                               # and 64 connections, then 1 connection for the p50, each
#                               # against the direct upstream; ROUNDS rounds alternating A and
#                               # B; needs wrk
#   scripts/bench.sh rule [CALLS]
#                               # one build (WARDEN_BIN, default: a `release` build) under
#                               # callgrind twice: reads of bench__read under a ToolPolicy with
#                               # no rules, then with one CEL rule (GOV-10) that never matches:
#                               # the instructions a call pays to evaluate one rule
#   scripts/bench.sh guard [CALLS]
#                               # the same for one build (WARDEN_BIN, default: a `release`
#                               # build), against scripts/instructions.baseline: fails more than
#                               # 5 % above it (.ci/run runs it)
#
# Each run starts a fresh `warden serve` on its embedded default (SQLite, durable audit, the
# demo project) plus the project `bench` (the benchmark upstream, a read, an ordinary
# mutation, a denied tool), and `warden bench upstream`, all on 127.0.0.1 free ports (`forward`
# starts `warden bench forward` in front of the upstream instead of Warden).
#
# Environment: CALLGRIND_KEEP (a directory: `instructions` and `guard` keep each build's
# `callgrind_annotate --inclusive=yes` there, to see which functions a change made dearer),
# KERNEL_EVENTS (`kernel`: perf events in place of its own list, comma-separated),
# WARDEN_BIN (default: `cargo build --profile dist -p warden`), DURATION (default
# 10s per round), ROUNDS (default 3), OUTPUT (table or json; default table), WARDEN_PREFIX (a
# command run before `warden serve`, as `perf record -F 2999 -g -o perf.data --` to profile
# the server; it is stopped with SIGTERM and must stop the server with it: `perf record` does,
# `perf stat` leaves it running — for counts use `kernel`), OTHERS_DIR (where `others` keeps
# the other gateways' Python virtual environments; default: bench-others in the cargo target
# directory).
set -euo pipefail

# The versions of the other gateways the `others` scenario measures (docs/benchmarks.md).
FASTMCP_VERSION=4.2.3
CONTEXTFORGE_VERSION=1.0.7.post20260921

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
scenario="${1:-}"
duration="${DURATION:-10s}"
rounds="${ROUNDS:-3}"
output="${OUTPUT:-table}"

die() {
	echo "bench.sh: $*" >&2
	exit 2
}
case "$scenario" in
perf1 | perf2 | perf3 | perf4 | eras | forward | others | soak | split | compare | cpu | kernel | instructions | guard | rule | wrk | stores) ;;
*) die "usage: $0 perf1|perf2|perf3|perf4 N|eras|forward|others|soak|split [CLIENTS]|compare A B [CLIENTS] [MIX]|cpu A B [CLIENTS]|kernel A B [CLIENTS]|instructions A B [CALLS]|guard [CALLS]|rule [CALLS]|wrk A B|stores [MIX]" ;;
esac

if [[ "$scenario" == compare || "$scenario" == cpu || "$scenario" == kernel || "$scenario" == instructions || "$scenario" == wrk ]]; then
	[[ -x "${2:-}" && -x "${3:-}" ]] || die "$scenario needs two warden binaries: $scenario A B …"
	WARDEN_BIN="$2"
fi
if [[ "$scenario" == kernel ]]; then
	command -v perf >/dev/null || die "kernel needs perf (e.g. apt-get install linux-perf)"
fi
if [[ "$scenario" == stores ]]; then
	[[ -n "${WARDEN_TEST_POSTGRES_URL:-}" ]] || die "stores needs WARDEN_TEST_POSTGRES_URL (a PostgreSQL server it may create databases on)"
	command -v psql >/dev/null || die "stores needs psql"
fi
if [[ "$scenario" == wrk ]]; then
	command -v wrk >/dev/null || die "wrk needs wrk (e.g. apt-get install wrk)"
fi
if [[ "$scenario" == instructions || "$scenario" == guard || "$scenario" == rule ]]; then
	command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
		die "$scenario needs valgrind (e.g. apt-get install valgrind)"
fi
if [[ -z "${WARDEN_BIN:-}" && ("$scenario" == guard || "$scenario" == rule) ]]; then
	(cd "$root" && cargo build --release --locked -p warden >&2) || die "cargo build failed"
	WARDEN_BIN="${CARGO_TARGET_DIR:-$root/target}/release/warden"
elif [[ -z "${WARDEN_BIN:-}" ]]; then
	(cd "$root" && cargo build --profile dist -p warden >&2) || die "cargo build failed"
	WARDEN_BIN="${CARGO_TARGET_DIR:-$root/target}/dist/warden"
fi
W="$WARDEN_BIN"

work="$(mktemp -d)"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# cpu_ticks PID: the CPU a process has used (user + system), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# wait_for FILE SED_EXPR PID
wait_for() {
	local value=""
	for _ in $(seq 1 600); do
		value="$(sed -n "$2" "$1" | sed -n 1p)"
		[[ -n "$value" ]] && break
		kill -0 "$3" 2>/dev/null || break
		sleep 0.1
	done
	echo "$value"
}

start_upstream() { # EXTRA_TOOLS
	"$W" bench upstream --listen 127.0.0.1:0 --extra-tools "$1" >"$work/up.out" 2>"$work/up.err" &
	pids+=($!)
	upstream="$(wait_for "$work/up.out" 's/^mcp: //p' "${pids[-1]}")"
	[[ -n "$upstream" ]] || die "the bench upstream did not start: $(cat "$work/up.err")"
}

start_warden() { # DATA_DIR CONFIG [STORE OPTIONS…, in place of `--data-dir DATA_DIR`]
	local store=(--data-dir "$1")
	(($# > 2)) && store=("${@:3}")
	${WARDEN_PREFIX:-} "$W" serve "${store[@]}" --listen 127.0.0.1:0 --config "$2" >"$work/serve.out" 2>"$work/serve.err" &
	pids+=($!)
	warden_pid="${pids[-1]}"
	url="$(wait_for "$work/serve.out" 's/^mcp: //p' "$warden_pid")"
	[[ -n "$url" ]] || die "warden did not start: $(cat "$work/serve.err")"
	token="$(sed -n 's/^admin token: //p' "$work/serve.out")"
	if [[ -z "$token" ]]; then
		token="$("$W" token create --user admin "${store[@]}")"
	fi
	export WARDEN_TOKEN="$token"
}

wait_for_tools() { # COUNT
	for _ in $(seq 1 600); do
		n="$("$W" tools inventory --server "${url%/mcp}" 2>/dev/null | grep -c '__' || true)"
		((n >= $1)) && return 0
		sleep 0.2
	done
	die "the catalog did not reach $1 tools"
}

bench_config() {
	cat >"$work/bench.yaml" <<EOF
kind: Project
name: bench
---
kind: Upstream
name: bench
project: bench
http:
  url: $upstream
---
kind: ToolPolicy
name: bench-write
project: bench
tool: bench__write
class: mutation
risk: ordinary
---
kind: ToolPolicy
name: bench-denied
project: bench
tool: bench__tool_0000
deny: "benchmark: always denied"
EOF
	if [[ -n "${BENCH_READ_POLICY:-}" ]]; then
		printf -- '---\n%s\n' "$BENCH_READ_POLICY" >>"$work/bench.yaml"
	fi
}

run() { # ARGS…
	echo "\$ warden bench $*" >&2
	"$W" bench "$url" -d "$duration" --rounds "$rounds" -o "$output" "$@"
}

standard() { # DATA_DIR [STORE OPTIONS…]
	start_upstream 1
	bench_config
	start_warden "$1" "$work/bench.yaml" "${@:2}"
	wait_for_tools 3
}

measure_instructions() { # NAME CALLS WARDEN
	# The build serves under callgrind; after 400 unmeasured calls the counters are zeroed,
	# CALLS reads run, and the counters are dumped. Instructions per call: everything Warden
	# executed (all threads: the serving threads, the audit commits, the checkpointer, the
	# pool's periodic reads, which a run slowed down ~50x by valgrind over-weights), the
	# audit commits (or, with the spool, its inserts) wherever they ran, everything but
	# those, the spool's appends on the call path, and the part under
	# `ListenerService::call` without the commits a request led (the requests themselves; "n/a"
	# when the build inlined `ListenerService::call` away, as profile-guided builds do: then
	# compare the figure without the commits). "everything else" goes to
	# $work/instructions.NAME.
	# valgrind runs SHA-256 in software (no SHA extensions), so hashing weighs ~25x more
	# than on the machine; compare builds with each other, not with native profiles.
	local name="$1" calls="$2" W="$3"
	WARDEN_PREFIX="valgrind --tool=callgrind --callgrind-out-file=$work/cg$name.%p" \
		standard "$work/data$name"
	"$W" bench "$url" -c 4 -n 400 --warmup 0s --mix read=1 --rounds 1 >/dev/null
	callgrind_control -z "$warden_pid" >/dev/null 2>&1
	"$W" bench "$url" -c 4 -n "$calls" --warmup 0s --mix read=1 --rounds 1 >/dev/null
	callgrind_control -d "$warden_pid" >/dev/null 2>&1
	sleep 1
	callgrind_annotate --inclusive=yes "$work/cg$name.$warden_pid.1" >"$work/cg$name.txt"
	if [[ -n "${CALLGRIND_KEEP:-}" ]]; then
		mkdir -p "$CALLGRIND_KEEP"
		cp "$work/cg$name.txt" "$CALLGRIND_KEEP/$(basename "$W").$name.txt"
		cp "$work/cg$name.$warden_pid.1" "$CALLGRIND_KEEP/$(basename "$W").$name.callgrind"
	fi
	python3 - "$W" "$calls" "$work/cg$name.txt" "$work/instructions.$name" <<'PY'
import re, sys
build, calls, path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
found = {}
for line in open(path):
    m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
    if not m:
        continue
    n, name = int(m.group(1).replace(",", "")), m.group(2)
    for key, pattern in (("all", r"PROGRAM TOTALS"),
                         ("requests", r"ListenerService as tower_service::Service.*::call::\{\{closure\}\} \["),
                         ("led", r"sqlite::appender::LeaderTurn::run \["),
                         ("commits", r"sqlite::appender::Inner::commit \["),
                         ("spooled", r"SqliteAppender::insert_spooled \["),
                         ("spool", r"spool::Spool::append \["),
                         # The serving threads, whole (each thread's entry, never inlined).
                         ("serving", r"warden-server/src/serve\.rs:std::sys::backtrace::__rust_begin_short_backtrace"),
                         ("sha256", r"sha256::compress256 \[")):
        if re.search(pattern, name):
            found[key] = max(found.get(key, 0), n)
per = {k: v / calls for k, v in found.items()}
requests = (f"{per['requests'] - per.get('led', 0):,.0f}" if "requests" in per else "n/a")
sha256 = f"{per['sha256']:,.0f}" if "sha256" in per else "n/a (inlined)"
commits = per.get('commits', 0) + per.get('spooled', 0)
rest = per.get('all', 0) - commits
serving = per.get("serving", 0) - per.get("led", 0)
print(f"{build}: instructions per call: {per.get('all', 0):,.0f} in all, of which the audit "
      f"commits or spooled inserts {commits:,.0f} (how calls group into commits varies from "
      f"run to run) and everything else {rest:,.0f}; on the serving threads without the "
      f"commits they led {serving:,.0f}; the spool's appends {per.get('spool', 0):,.0f}; "
      f"serving requests without the commits they led {requests}; SHA-256, in software "
      f"under valgrind, {sha256}")
open(out, "w").write(f"{rest:.0f}\n")
open(out + ".serving", "w").write(f"{serving:.0f}\n")
PY
	kill "$warden_pid" "${pids[-2]}" 2>/dev/null || true
}

# `cpu` and `kernel`: a fresh Warden and upstream for a build, warmed up for a second at
# CLIENTS outside the reading; then the measured reads (their JSON report on stdout); then
# both stopped.
fresh_build() { # DATA_DIR CLIENTS
	standard "$1"
	"$W" bench "$url" -c "$2" -d 1s --warmup 0s --mix read=1 --rounds 1 >/dev/null
}
measured_reads() { # CLIENTS
	"$W" bench "$url" -c "$1" -d "$duration" --warmup 0s --mix read=1 --rounds 1 -o json
}
stop_build() {
	kill "$warden_pid" "${pids[-2]}" 2>/dev/null || true
	wait "$warden_pid" "${pids[-2]}" 2>/dev/null || true
}

case "$scenario" in
perf1)
	standard "$work/data"
	run -c 1 --mix read=1 --direct "$upstream"
	run -c 64 --mix read=1 --direct "$upstream"
	;;
perf2)
	standard "$work/data"
	run -c 64 --mix read=1,write=1 --direct "$upstream"
	run -c 64 --mix read=1,denied=1 --denied-tool bench__tool_0000 --direct "$upstream"
	;;
forward)
	# No Warden: the forwarder only copies bytes, so tool names are the upstream's own.
	start_upstream 1
	hostport="${upstream#http://}"
	"$W" bench forward --listen 127.0.0.1:0 --to "${hostport%%/*}" >"$work/forward.out" 2>"$work/forward.err" &
	pids+=($!)
	forward="$(wait_for "$work/forward.out" 's/^forward: \([^ ]*\) .*/\1/p' "${pids[-1]}")"
	[[ -n "$forward" ]] || die "the forwarder did not start: $(cat "$work/forward.err")"
	url="http://$forward/mcp"
	unset WARDEN_TOKEN
	run -c 1 --mix read=1 --read-tool read --direct "$upstream"
	run -c 64 --mix read=1 --read-tool read --direct "$upstream"
	;;
others)
	# PERF-2's "ahead of other MCP gateways measured the same way": Warden, FastMCP's proxy
	# (scripts/fastmcp-proxy.py; with a fresh upstream session per request, its default, then
	# with one shared session) and IBM's ContextForge (scripts/contextforge-gateway.sh), one at
	# a time in front of the same upstream, each measured as perf1 measures Warden (reads, 1 and
	# 64 clients, rounds alternating with the direct call) in the era all three speak,
	# 2025-11-25. Each is installed into a virtual environment of its own under OTHERS_DIR on
	# first use.
	others="${OTHERS_DIR:-${CARGO_TARGET_DIR:-$root/target}/bench-others}"
	install_other() { # NAME MODULE PACKAGE==VERSION
		if ! "$others/$1/bin/python" -c "import $2" 2>/dev/null; then
			echo "installing $3 into $others/$1" >&2
			{ python3 -m venv "$others/$1" && "$others/$1/bin/pip" install -q "$3"; } >&2 ||
				die "could not install $3 into $others/$1 (needs python3 and PyPI)"
		fi
	}
	install_other fastmcp fastmcp "fastmcp==$FASTMCP_VERSION"
	install_other contextforge mcpgateway "mcp-contextforge-gateway==$CONTEXTFORGE_VERSION"
	free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
	both() { # ARGS…: 1 and 64 clients, reads, against the upstream directly
		run -c 1 --mix read=1 --era 2025-11-25 --direct "$upstream" "$@"
		run -c 64 --mix read=1 --era 2025-11-25 --direct "$upstream" "$@"
	}

	standard "$work/data"
	echo "# Warden $("$W" --version | cut -d' ' -f2)" >&2
	both
	kill "$warden_pid"
	wait "$warden_pid" 2>/dev/null || true
	unset WARDEN_TOKEN

	for mode in fresh shared; do
		port="$(free_port)"
		"$others/fastmcp/bin/python" "$root/scripts/fastmcp-proxy.py" "$upstream" "$port" "$mode" >"$work/fastmcp.out" 2>&1 &
		pids+=($!)
		[[ -n "$(wait_for "$work/fastmcp.out" 's/.*Uvicorn running on //p' "${pids[-1]}")" ]] ||
			die "FastMCP's proxy did not start: $(cat "$work/fastmcp.out")"
		url="http://127.0.0.1:$port/mcp"
		echo "# FastMCP $FASTMCP_VERSION (create_proxy; upstream session: $mode)" >&2
		both --read-tool read
		kill "${pids[-1]}"
		wait "${pids[-1]}" 2>/dev/null || true
	done

	"$root/scripts/contextforge-gateway.sh" "$others/contextforge" "$upstream" "$(free_port)" "$work/contextforge" >"$work/cf.out" ||
		die "ContextForge did not start (above)"
	pids+=("$(sed -n 's/^pid: //p' "$work/cf.out")")
	url="$(sed -n 's/^url: //p' "$work/cf.out")"
	echo "# ContextForge $CONTEXTFORGE_VERSION (stateful sessions, no rate limit: scripts/contextforge-gateway.sh)" >&2
	read_tool="$(sed -n 's/^read-tool: //p' "$work/cf.out")" # `<gateway>-read`
	WARDEN_TOKEN="$(sed -n 's/^token: //p' "$work/cf.out")" both --read-tool "$read_tool" --direct-prefix "${read_tool%read}"
	;;
eras)
	standard "$work/data"
	run -c 1 --mix read=1 --era 2026-07-28 --direct "$upstream"
	run -c 1 --mix read=1 --era 2025-11-25 --direct "$upstream"
	;;
soak)
	# Sustained load, no direct rounds in between: the audit's WAL and its spool files must
	# stay bounded while appends never stop (the checkpoint catches up with the appender
	# paused; the spool's two files take turns and are emptied once inserted).
	standard "$work/data"
	echo "\$ warden bench -c 64 -d ${SOAK:-30s} --mix read=1,write=1" >&2
	"$W" bench "$url" -c 64 -d "${SOAK:-30s}" -o "$output" --mix read=1,write=1
	for f in "$work/data"/warden.db*; do
		echo "$(basename "$f"): $(($(stat -c %s "$f") / 1024)) KiB"
	done
	;;
perf3)
	start_upstream 98
	"$W" bench catalog --projects 100 --upstream "$upstream" >"$work/catalog.yaml"
	start_warden "$work/data" "$work/catalog.yaml"
	wait_for_tools 10000
	# A caller bound to one project (100 tools out of 10,000): the filter over the whole
	# catalog, then the admin, who sees all 10,000.
	admin="$WARDEN_TOKEN"
	WARDEN_TOKEN="$("$W" token create --user admin --project p000 --data-dir "$work/data")"
	export WARDEN_TOKEN
	sleep 2 # the server reads new credentials from the store within a second
	run -c 1 --mix list=1 --rss-pid "$warden_pid"
	WARDEN_TOKEN="$admin"
	run -c 1 --mix list=1 --rss-pid "$warden_pid"
	;;
split)
	# The CPU each of the three processes spends per call, governed and direct, in the same
	# rounds: the load generator's from bash's `time` (user + sys of `warden bench`), Warden's
	# and the upstream's from /proc around the run. A one-second warm-up precedes the rounds.
	clients="${2:-64}"
	[[ "$clients" =~ ^[1-9][0-9]*$ ]] || die "split: CLIENTS must be a positive number"
	hz="$(getconf CLK_TCK)"
	standard "$work/data"
	up_pid="${pids[-2]}"
	"$W" bench "$url" -c "$clients" -d 1s --warmup 0s --mix read=1 --rounds 1 >/dev/null
	for round in $(seq 1 "$rounds"); do
		for target in governed direct; do
			endpoint="$url"
			tools=()
			if [[ "$target" == direct ]]; then
				endpoint="$upstream"
				tools=(--read-tool read)
			fi
			w0="$(cpu_ticks "$warden_pid")"
			u0="$(cpu_ticks "$up_pid")"
			TIMEFORMAT='%U %S'
			{ time "$W" bench "$endpoint" -c "$clients" -d "$duration" --warmup 0s --mix read=1 \
				--rounds 1 -o json "${tools[@]}" >"$work/split.json" 2>/dev/null; } 2>"$work/split.time"
			w1="$(cpu_ticks "$warden_pid")"
			u1="$(cpu_ticks "$up_pid")"
			REPORT="$(cat "$work/split.json")" python3 - "$round" "$target" "$((w1 - w0))" \
				"$((u1 - u0))" "$hz" "$(cat "$work/split.time")" <<'PY'
import json, os, sys
round_, target, wt, ut, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
user, sys_ = (float(x) for x in sys.argv[6].split())
t = json.loads(os.environ["REPORT"])["gateway"]["total"]
n = max(t["requests"] - t["errors"], 1)
load, warden, up = (user + sys_) * 1e6 / n, wt * 1e6 / hz / n, ut * 1e6 / hz / n
line = (f"round {round_} {target:8s} {t['rps']:8.0f} calls/s, p50 {t['p50_ms']:.3f} ms; CPU per call: "
        f"load generator {load:5.1f} us, upstream {up:5.1f} us")
if target == "governed":
    line += f", Warden {warden:5.1f} us; sum {load + up + warden:5.1f} us"
else:
    line += f"; sum {load + up:5.1f} us"
print(line)
PY
		done
	done
	;;
compare)
	# One Warden and one upstream per build, started alike; then ROUNDS rounds, each running
	# both builds one after the other (a gateway round and a direct round each), so that both
	# see the same machine. CPU per call is read from /proc (utime + stime) around each run;
	# the upstream's serves as the yardstick of the machine's speed in that moment. Each round
	# is preceded by a one-second warm-up of both targets, outside the CPU reading.
	clients="${4:-64}"
	mix="${5:-read=1}"
	hz="$(getconf CLK_TCK)"
	declare -a c_url c_token c_up c_pid c_uppid
	for build in 0 1; do
		W="${*:2+build:1}"
		standard "$work/data$build"
		c_url[build]="$url"
		c_token[build]="$WARDEN_TOKEN"
		c_up[build]="$upstream"
		c_pid[build]="$warden_pid"
		c_uppid[build]="${pids[-2]}"
	done
	for round in $(seq 1 "$rounds"); do
		for build in 0 1; do
			W="${*:2+build:1}"
			# The warm-up runs before the CPU is read: the figures count measured calls only.
			WARDEN_TOKEN="${c_token[build]}" "$W" bench "${c_url[build]}" -c "$clients" -d 1s \
				--warmup 0s --mix "$mix" --direct "${c_up[build]}" --rounds 1 >/dev/null
			w0="$(cpu_ticks "${c_pid[build]}")"
			u0="$(cpu_ticks "${c_uppid[build]}")"
			report="$(WARDEN_TOKEN="${c_token[build]}" "$W" bench "${c_url[build]}" -c "$clients" \
				-d "$duration" --warmup 0s --mix "$mix" --direct "${c_up[build]}" --rounds 1 -o json)"
			w1="$(cpu_ticks "${c_pid[build]}")"
			u1="$(cpu_ticks "${c_uppid[build]}")"
			REPORT="$report" python3 - "$round" "$W" "$((w1 - w0))" "$((u1 - u0))" "$hz" <<'PY'
import json, os, sys
round_, build, wt, ut, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
r = json.loads(os.environ["REPORT"])
g, d, ratio = r["gateway"]["total"], r["direct"]["total"], r["ratios"]["all"]
us_w = wt * 1e6 / hz / max(g["requests"], 1)
us_u = ut * 1e6 / hz / max(g["requests"] + d["requests"], 1)
print(f"round {round_} {build}: warden {g['rps']:.0f}/s p50 {g['p50_ms']:.3f} p99 {g['p99_ms']:.3f} ms, "
      f"direct {d['rps']:.0f}/s p50 {d['p50_ms']:.3f} p99 {d['p99_ms']:.3f} ms; "
      f"throughput {ratio['throughput']:.3f} x direct, added p50 {ratio['added_p50_ms']:+.3f} "
      f"p99 {ratio['added_p99_ms']:+.3f} ms, p99 ratio {ratio['p99_ratio']:.2f}; "
      f"CPU per call: warden {us_w:.0f} us, upstream {us_u:.0f} us ({us_w / max(us_u, 1e-9):.2f} x)")
PY
		done
	done
	;;
cpu)
	# Warden's own CPU per governed call (all its threads, from /proc), without direct rounds
	# in between: each round starts both builds afresh, one after the other, with a one-second
	# warm-up outside the reading. Steadier than `compare` for telling builds apart.
	clients="${4:-64}"
	hz="$(getconf CLK_TCK)"
	for round in $(seq 1 "$rounds"); do
		for build in 0 1; do
			W="${*:2+build:1}"
			fresh_build "$work/data$round$build" "$clients"
			w0="$(cpu_ticks "$warden_pid")"
			report="$(measured_reads "$clients")"
			w1="$(cpu_ticks "$warden_pid")"
			REPORT="$report" python3 - "$round" "$W" "$((w1 - w0))" "$hz" <<'PY'
import json, os, sys
round_, build, wt, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = json.loads(os.environ["REPORT"])["gateway"]["total"]
print(f"round {round_} {build}: {t['rps']:.0f} calls/s, p50 {t['p50_ms']:.3f} ms, "
      f"Warden's CPU per call {wt * 1e6 / hz / max(t['requests'], 1):.1f} us")
PY
			stop_build
		done
	done
	;;
stores)
	# The same build on each store: fresh processes per store and round, the order of the
	# stores alternating from round to round, a one-second warm-up outside the reading.
	mix="${2:-read=1}"
	server="${WARDEN_TEST_POSTGRES_URL%/*}"
	for round in $(seq 1 "$rounds"); do
		order=(sqlite postgres)
		((round % 2 == 0)) && order=(postgres sqlite)
		for store in "${order[@]}"; do
			options=()
			if [[ "$store" == postgres ]]; then
				db="warden_bench_$$_$round"
				psql "$WARDEN_TEST_POSTGRES_URL" -qAt -c "CREATE DATABASE $db" >/dev/null
				# Its audit key and secrets go to the default data directory: one of its own.
				options=(--database-url "$server/$db")
				export XDG_DATA_HOME="$work/xdg-$round"
			fi
			standard "$work/data-$store-$round" "${options[@]}"
			for clients in 1 64; do
				"$W" bench "$url" -c "$clients" -d 1s --warmup 0s --mix "$mix" --rounds 1 >/dev/null
				"$W" bench "$url" -c "$clients" -d "$duration" --warmup 0s --mix "$mix" --rounds 1 -o json |
					python3 -c 'import json, sys; t = json.load(sys.stdin)["gateway"]["total"]; print(sys.argv[1], sys.argv[2], sys.argv[3], round(t["rps"]), round(t["p50_ms"], 3))' \
						"$round" "$store" "$clients" >>"$work/stores.txt"
			done
			stop_build
			[[ "$store" == postgres ]] && psql "$WARDEN_TEST_POSTGRES_URL" -qAt -c "DROP DATABASE $db WITH (FORCE)" >/dev/null
		done
	done
	python3 - "$work/stores.txt" "$mix" <<'PY'
import collections, sys
rows = [l.split() for l in open(sys.argv[1])]
by = collections.defaultdict(dict)
for round_, store, clients, rps, p50 in rows:
    by[(round_, clients)][store] = (int(rps), float(p50))
print(f"mix {sys.argv[2]}: calls/s (p50 ms) per round, SQLite and PostgreSQL, and PostgreSQL/SQLite")
for (round_, clients), s in sorted(by.items(), key=lambda kv: (int(kv[0][1]), int(kv[0][0]))):
    (sq, sq50), (pg, pg50) = s["sqlite"], s["postgres"]
    print(f"round {round_}, {clients:>2} clients: SQLite {sq:>6} ({sq50:.3f}), PostgreSQL {pg:>6} ({pg50:.3f}): {pg / max(sq, 1):.2f} x")
PY
	;;
kernel)
	# As `cpu`, with `perf stat` attached to Warden for the measured run (stopped with SIGINT,
	# which makes it write its counts). Tracepoints count every event, not a sample.
	clients="${4:-64}"
	events="kmem:mm_page_alloc,syscalls:sys_enter_write,syscalls:sys_enter_writev"
	events+=",syscalls:sys_enter_pwrite64,syscalls:sys_enter_ftruncate,syscalls:sys_enter_futex"
	events+=",context-switches"
	events="${KERNEL_EVENTS:-$events}"
	for round in $(seq 1 "$rounds"); do
		for build in 0 1; do
			W="${*:2+build:1}"
			fresh_build "$work/data$round$build" "$clients"
			perf stat -x, -e "$events" -p "$warden_pid" -o "$work/stat$round$build" &
			stat_pid=$!
			sleep 0.2
			if ! kill -0 "$stat_pid" 2>/dev/null; then
				cat "$work/stat$round$build" >&2 2>/dev/null || true
				die "perf stat could not attach to Warden (pid $warden_pid; see above: perf_event_paranoid, permissions)"
			fi
			report="$(measured_reads "$clients")"
			kill -INT "$stat_pid"
			wait "$stat_pid" 2>/dev/null || true
			REPORT="$report" python3 - "$round" "$W" "$work/stat$round$build" <<'PY'
import json, os, sys
round_, build, path = sys.argv[1:4]
t = json.loads(os.environ["REPORT"])["gateway"]["total"]
calls = max(t["requests"], 1)
counts = {}
for line in open(path):
    fields = line.strip().split(",")
    if len(fields) > 2 and fields[0].replace(".", "").isdigit():
        counts[fields[2].split(":")[-1].replace("sys_enter_", "")] = float(fields[0])
if not counts:
    sys.exit(f"bench.sh: perf stat counted nothing for {build}; its output:\n{open(path).read()}")
shown = ", ".join(f"{k} {v / calls:.3g}" for k, v in counts.items())
print(f"round {round_} {build}: {t['rps']:.0f} calls/s; per call: {shown}")
PY
			stop_build
		done
	done
	;;
instructions)
	calls="${4:-2000}"
	[[ "$calls" =~ ^[0-9]+$ ]] || die "instructions: CALLS must be a number"
	for build in 0 1; do
		W="${*:2+build:1}"
		measure_instructions "$build" "$calls" "$W"
	done
	;;
rule)
	# GOV-10's "a call pays evaluation only": the same build and calls, bench__read under a
	# ToolPolicy without rules, then with one rule that reads an argument and never holds.
	calls="${2:-2000}"
	[[ "$calls" =~ ^[0-9]+$ ]] || die "rule: CALLS must be a number"
	policy=$'kind: ToolPolicy\nname: bench-read\nproject: bench\ntool: bench__read\nclass: read'
	BENCH_READ_POLICY="$policy" measure_instructions norule "$calls" "$W"
	BENCH_READ_POLICY="$policy"$'\nrules:\n  - name: long-keys\n    when: "has(args.key) && size(args.key) > 60"\n    deny: "keys are short"' \
		measure_instructions rule "$calls" "$W"
	python3 - "$(cat "$work/instructions.norule.serving")" "$(cat "$work/instructions.rule.serving")" <<'PY'
import sys
without, with_rule = int(sys.argv[1]), int(sys.argv[2])
print(f"rule: {with_rule - without:+,} instructions per call on the serving threads for one "
      f"rule ({without:,} without, {with_rule:,} with; {(with_rule - without) / without * 100:+.1f} %)")
PY
	;;
guard)
	# The sum of small costs (docs/benchmarks-method.md, "The guard"): the instructions a
	# governed call executes on the serving threads, without the audit commits they led (whose
	# grouping varies from run to run), against scripts/instructions.baseline; more than 5 %
	# above it fails. The other threads' periodic work (the store's polls) grows with the run's
	# wall time, which a busy machine stretches, so it is printed but not compared.
	calls="${2:-2000}"
	baseline="$(sed -n 's/^serving threads: //p' "$here/instructions.baseline")"
	[[ "$baseline" =~ ^[0-9]+$ ]] || die "guard: scripts/instructions.baseline has no \`serving threads: N\` line"
	measure_instructions guard "$calls" "$W"
	measured="$(cat "$work/instructions.guard.serving")"
	python3 - "$measured" "$baseline" <<'PY'
import sys
measured, baseline = int(sys.argv[1]), int(sys.argv[2])
change = (measured - baseline) / baseline * 100
print(f"guard: {measured:,} instructions per governed call on the serving threads, besides "
      f"the audit commits; baseline {baseline:,} ({change:+.1f} %)")
if change > 5:
    print("guard: more than 5 % above the baseline: find what the call path gained "
          "(scripts/bench.sh instructions OLD NEW), or, if it is wanted, raise "
          "scripts/instructions.baseline in a commit that says why", file=sys.stderr)
    sys.exit(1)
PY
	;;
wrk)
	# Per round and build: a fresh Warden and upstream; wrk at 64 connections (2 threads)
	# against Warden, then against the upstream; then 1 connection each for the p50. Each
	# line: calls/s governed and direct, their ratio, the p50s and the added p50.
	body() { # TOOL
		printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{"key":"k"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}' "$1"
	}
	cat >"$work/call.lua" <<'LUA'
local token = os.getenv("WRK_TOKEN")
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2026-07-28"
wrk.headers["mcp-method"] = "tools/call"
wrk.headers["mcp-name"] = os.getenv("WRK_TOOL")
if token ~= nil and token ~= "" then wrk.headers["authorization"] = "Bearer " .. token end
wrk.body = os.getenv("WRK_BODY")
done = function(summary, latency, requests)
  io.write(string.format("wrk: %d %d %.1f %.3f\n", summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout,
    summary.requests / summary.duration * 1e6, latency:percentile(50) / 1000))
end
LUA
	one() { # TOOL TOKEN URL CONNECTIONS THREADS: "calls/s p50_ms"
		local line
		line="$(WRK_TOOL="$1" WRK_TOKEN="$2" WRK_BODY="$(body "$1")" wrk -t"$5" -c"$4" -d"$duration" -s "$work/call.lua" "$3" | sed -n 's/^wrk: //p')"
		read -r requests errors rate p50 <<<"$line"
		[[ -n "$requests" && "$errors" == 0 ]] || die "wrk against $3: ${errors:-no} errors"
		echo "$rate $p50"
	}
	for round in $(seq 1 "$rounds"); do
		for build in 0 1; do
			W="${*:2+build:1}"
			standard "$work/data$round$build"
			answer="$(curl -sS "$url" -H 'content-type: application/json' \
				-H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
				-H 'mcp-method: tools/call' -H 'mcp-name: bench__read' -H "authorization: Bearer $token" \
				--data "$(body bench__read)")"
			[[ "$answer" == *'"result"'* && "$answer" != *'"isError":true'* ]] ||
				die "the governed call does not succeed: $answer"
			one bench__read "$token" "$url" 1 1 >/dev/null # warm
			read -r g64 _ <<<"$(one bench__read "$token" "$url" 64 2)"
			read -r d64 _ <<<"$(one read "" "$upstream" 64 2)"
			read -r _ g1 <<<"$(one bench__read "$token" "$url" 1 1)"
			read -r _ d1 <<<"$(one read "" "$upstream" 1 1)"
			python3 - "$W" "$round" "$g64" "$d64" "$g1" "$d1" <<'PY'
import sys
build, rnd, g64, d64, g1, d1 = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f"round {rnd} {build}: 64 connections {g64:,.0f} calls/s governed, {d64:,.0f} direct, "
      f"ratio {g64 / d64:.3f}; 1 connection p50 {g1:.3f} ms governed, {d1:.3f} ms direct, "
      f"added {g1 - d1:+.3f} ms")
PY
			kill "$warden_pid" "${pids[-2]}" 2>/dev/null || true
		done
	done
	;;
perf4)
	records="${2:-}"
	[[ "$records" =~ ^[0-9]+$ ]] || die "perf4 needs a record count, e.g. 100000"
	start_upstream 1
	bench_config
	"$W" migrate --data-dir "$work/data" >/dev/null
	"$W" bench fill-audit --records "$records" --data-dir "$work/data" >"$work/fill.json"
	cat "$work/fill.json" >&2
	start_warden "$work/data" "$work/bench.yaml"
	wait_for_tools 3
	run -c 1 --mix read=1 --direct "$upstream"
	kill "$warden_pid"
	wait "$warden_pid" 2>/dev/null || true
	sample="$(sed -n 's/.*"sample_run": "\([^"]*\)".*/\1/p' "$work/fill.json")"
	echo "\$ warden bench trail --run $sample" >&2
	"$W" bench trail --run "$sample" --data-dir "$work/data"
	;;
esac
