#!/usr/bin/env bash
# Makes sure the Python venv at $1 holds python/requirements.txt (the official MCP Python
# SDK), creating it on first use. Under a lock: test binaries running at once share it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:?usage: venv.sh DIR}"
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import mcp, httpx2' 2>/dev/null ||
  "$venv/bin/pip" install --quiet -r "$here/python/requirements.txt"
