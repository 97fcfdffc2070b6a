#!/usr/bin/env bash
# Builds Warden with an experiment patch applied to HEAD and prints the binary's path, for
# `scripts/bench.sh compare A B`. An experiment build measures a question (docs/benchmarks.md
# says which); it is never a release:
#
#   scripts/experiment.sh docs/experiments/no-audit.patch     # no audit record stored
#   scripts/experiment.sh docs/experiments/audit-spool.patch  # the audit spooled, then inserted
#
# The patch is applied in a worktree of its own, built in a target directory of its own (a
# cold `dist` build, ~15 min), and the worktree removed. The profile in `pgo/` still applies;
# rustc warns about the functions the patch changed, which are then built without it.
#
# Environment: EXPERIMENT_DIR (default: target/experiments under the repository).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 1 && -f "$1" ]] || {
	echo "usage: $0 PATCH (e.g. docs/experiments/no-audit.patch)" >&2
	exit 2
}
patch="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
name="$(basename "$patch" .patch)"
dir="${EXPERIMENT_DIR:-$root/target/experiments}/$name"
mkdir -p "$dir"
git -C "$root" worktree remove --force "$dir/src" 2>/dev/null || rm -rf "$dir/src"
git -C "$root" worktree add --detach "$dir/src" HEAD >&2
trap 'git -C "$root" worktree remove --force "$dir/src" 2>/dev/null || true' EXIT
git -C "$dir/src" apply "$patch" || {
	echo "experiment.sh: $patch does not apply to HEAD" >&2
	exit 1
}
(cd "$dir/src" && CARGO_TARGET_DIR="$dir/target" cargo build --profile dist -p warden --locked >&2)
cp "$dir/target/dist/warden" "$dir/warden"
echo "$dir/warden"
