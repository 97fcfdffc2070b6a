#!/usr/bin/env bash
# Starts the OpenID provider of Warden's OAuth 2.1 resource-server tests (provider.mjs,
# oidc-provider pinned by package-lock.json) in the foreground. See README.md.
#
# Usage: tests/oidc/run.sh            start it; prints `issuer: http://127.0.0.1:<port>`
#        tests/oidc/run.sh --check    start a private one and run check.mjs against it
#
# Environment:
#   PORT              port on 127.0.0.1 (default 0: a free one)
#   REDIRECT_URIS     comma-separated redirect URIs of `mcp-client`
#                     (default http://127.0.0.1:33418/callback)
#   ACCESS_TOKEN_TTL  access-token lifetime in seconds (default 3600)
#   NODE_BIN_DIR      a directory holding Node >= 22 (`node`, `npm`), put first on PATH
#   NODE22_PREFIX     where to install node@22 from npm when no Node >= 22 is found
#                     (default: tests/oidc/.node22)
#
# stdout carries only the `issuer:` line (check.mjs: its report); setup output goes to
# stderr. The provider replaces this shell (exec), so killing the started process ends it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() {
	echo "oidc: $*" >&2
	exit 2
}

case "${1:-}" in
"") script=provider.mjs ;;
--check) script=check.mjs ;;
*) die "usage: $0 [--check]" ;;
esac

# Tests may start several providers at once: one setup at a time (lock on this directory).
exec 9<"$here"
flock 9

# npm 11.19 and later run a dependency's install scripts only where the project allows them,
# and the `node` package's preinstall script is what fetches Node: a package.json of the
# install directory allows it (older npm ignores the field). What an earlier install left
# without Node goes first, or npm would find nothing to do.
allow_node_scripts() {
	rm -rf node_modules package-lock.json
	printf '{"private": true, "allowScripts": {"node": true}}\n' >package.json
}
# Node >= 22: NODE_BIN_DIR, else the `node` on PATH, else one installed from npm (`node@22`)
# into NODE22_PREFIX (default: tests/oidc/.node22, ignored by git) and reused.
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [[ -n "${NODE_BIN_DIR:-}" ]]; then
	PATH="$NODE_BIN_DIR:$PATH"
fi
if (($(node_major) < 22)); then
	prefix="${NODE22_PREFIX:-$here/.node22}"
	if [[ ! -x "$prefix/node_modules/.bin/node" ]]; then
		command -v npm >/dev/null || die "need Node >= 22, or npm to install it"
		echo "oidc: Node >= 22 needed; installing node@22 into $prefix…" >&2
		mkdir -p "$prefix"
		(cd "$prefix" && allow_node_scripts && npm install --no-audit --no-fund --no-save node@22 >&2) ||
			die "npm install node@22 failed"
	fi
	PATH="$prefix/node_modules/.bin:$PATH"
	(($(node_major) >= 22)) || die "Node >= 22 not found (set NODE_BIN_DIR)"
fi

# oidc-provider, pinned by package-lock.json.
if [[ ! -f "$here/node_modules/oidc-provider/package.json" ]]; then
	echo "oidc: installing oidc-provider (npm ci)…" >&2
	(cd "$here" && npm ci --no-audit --no-fund >&2) || die "npm ci failed"
fi

exec 9<&-
exec node "$here/$script"
