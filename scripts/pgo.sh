#!/usr/bin/env bash
# Regenerates pgo/warden.profdata, the profile that optimised builds use (scripts/rustc-pgo):
#
#   scripts/pgo.sh
#
# 1. builds an instrumented `dist` binary (`-C profile-generate`, its own target directory);
# 2. runs the training workload on it: `scripts/bench.sh perf1`, `perf2` and `eras` (Warden on
#    its embedded default with the benchmark project, at 1 and 64 clients: reads, writes,
#    denials, both protocol eras);
# 3. turns what `warden serve` counted into a sparse profile (functions that never ran are
#    left out, so they are compiled as without a profile, not as cold code) and records the
#    LLVM version that wrote it (pgo/LLVM_VERSION).
#
# Needs `llvm-profdata` of rustc's LLVM major version (`rustc -vV`; a newer one may write a
# profile format rustc cannot read; on Debian `apt-get install llvm-22` gives
# /usr/lib/llvm-22/bin/llvm-profdata); set LLVM_PROFDATA to use another. Takes about as long
# as a `dist` build, plus a minute and a half of training.
# Environment: PGO_TARGET_DIR (default: target/pgo-generate).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() {
	echo "pgo.sh: $*" >&2
	exit 2
}

llvm="$(rustc -vV | sed -n 's/^LLVM version: \([0-9.]*\).*/\1/p')"
[[ -n "$llvm" ]] || die "cannot read rustc's LLVM version from \`rustc -vV\`"
major="${llvm%%.*}"
profdata="${LLVM_PROFDATA:-}"
if [[ -z "$profdata" ]]; then
	for candidate in "llvm-profdata-$major" "/usr/lib/llvm-$major/bin/llvm-profdata" llvm-profdata; do
		if command -v "$candidate" >/dev/null; then
			profdata="$candidate"
			break
		fi
	done
fi
[[ -n "$profdata" ]] || die "no llvm-profdata found for LLVM $major (e.g. apt-get install llvm-$major)"
tool_major="$("$profdata" merge --version 2>/dev/null | sed -n 's/.*LLVM version \([0-9]*\).*/\1/p' | sed -n 1p)"
[[ -n "$tool_major" && "$tool_major" -eq "$major" ]] ||
	die "$profdata is LLVM ${tool_major:-unknown}; rustc writes LLVM $major profiles"

target="${PGO_TARGET_DIR:-$root/target/pgo-generate}"
work="$(mktemp -d)"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

echo "pgo.sh: building the instrumented binary in $target" >&2
# Build scripts and proc macros count into the target directory; the training's counts are
# written to the scratch directory instead (LLVM_PROFILE_FILE below).
(cd "$root" && WARDEN_PGO=0 RUSTFLAGS="-Cprofile-generate=$target/profraw" \
	cargo build --profile dist -p warden --locked --target-dir "$target" >&2)
W="$target/dist/warden"

# The training is scripts/bench.sh's own scenarios, run on the instrumented binary. Only
# `warden serve`'s counts make the profile (WARDEN_PREFIX is how bench.sh starts it): the load
# generator and the upstream fixture are the same binary, but what they run is not what a user
# runs. Each process writes its counts when it exits; bench.sh stops Warden with SIGTERM,
# which it handles by shutting down.
echo "pgo.sh: training" >&2
export WARDEN_BIN="$W" DURATION=5s ROUNDS=1 OUTPUT=json
export LLVM_PROFILE_FILE="$work/tools/%p.profraw"
export WARDEN_PREFIX="env LLVM_PROFILE_FILE=$work/serve/%p.profraw"
for scenario in perf1 perf2 eras; do
	"$root/scripts/bench.sh" "$scenario" >/dev/null 2>&1 || die "scripts/bench.sh $scenario failed"
done

shopt -s nullglob
raw=("$work"/serve/*.profraw)
((${#raw[@]} == 3)) || die "expected the counts of three runs of warden serve, found ${#raw[@]}"
mkdir -p "$root/pgo"
"$profdata" merge --sparse -o "$root/pgo/warden.profdata" "${raw[@]}"
echo "$llvm" >"$root/pgo/LLVM_VERSION"
echo "pgo.sh: wrote pgo/warden.profdata ($(($(stat -c %s "$root/pgo/warden.profdata") / 1024)) KiB, LLVM $llvm)" >&2
