#!/usr/bin/env bash
# IBM ContextForge MCP gateway (PyPI `mcp-contextforge-gateway`) in front of one upstream MCP
# server, for benchmarking gateways.
#
# Usage: scripts/contextforge-gateway.sh VENV UPSTREAM_URL PORT WORKDIR
#
#   VENV          virtualenv with mcp-contextforge-gateway installed (its bin/mcpgateway is run)
#   UPSTREAM_URL  a Streamable HTTP MCP endpoint, e.g. http://127.0.0.1:8601/mcp
#   PORT          where ContextForge listens, on 127.0.0.1
#   WORKDIR       scratch directory (created if missing): SQLite database, log, HOME and TMPDIR
#                 of the gateway. Nothing is written anywhere else (Python may refresh the venv's
#                 __pycache__).
#
# It starts ContextForge in the background (`mcpgateway`, i.e. uvicorn with ContextForge's app,
# one worker), waits until /health answers, registers the upstream as a gateway
# (POST /v1/gateways), creates a virtual server holding all the upstream's tools
# (POST /v1/servers), checks that one `read` call goes through, and prints on stdout:
#
#   url: http://127.0.0.1:PORT/servers/<server id>/mcp   (Streamable HTTP, MCP 2025 era)
#   token: <JWT for the platform admin, accepted by that endpoint as a bearer token>
#   pid: <ContextForge's pid; kill it to stop ContextForge>
#   read-tool: <the upstream's `read` tool as ContextForge names it, e.g. bench-read>
#
# e.g.  WARDEN_TOKEN=<token> warden bench <url> --era 2025-11-25 --read-tool <read-tool>
#
# Settings: ContextForge's defaults, started from an empty environment (so no stray variable or
# .env changes them), except:
#   DATABASE_URL            SQLite file in WORKDIR (the default is ./mcp.db; we also run in WORKDIR)
#   JWT_SECRET_KEY, AUTH_ENCRYPTION_SECRET, PLATFORM_ADMIN_PASSWORD, BASIC_AUTH_PASSWORD
#                           generated per run (ContextForge refuses to start without the first two)
#   SSRF_ALLOW_LOCALHOST=true
#                           the default SSRF protection rejects loopback upstreams; protection
#                           itself stays on
#   USE_STATEFUL_SESSIONS=true
#                           NON-DEFAULT (default: stateless, no Mcp-Session-Id). A 2025-era client
#                           that expects a session (warden bench --era 2025-11-25) cannot run
#                           against the stateless default. Stateful mode keeps sessions and an
#                           in-memory event store in the one worker.
#   RATE_LIMITING_ENABLED=false
#                           NON-DEFAULT. The default rate limiter allows 100 requests/minute per
#                           client IP and per user on /mcp and /servers/*, answers HTTP 429 beyond
#                           that and, after 5 rejections, locks the client out for 15 minutes:
#                           any load test fails within seconds. Raising the limit instead would
#                           keep the middleware but, with no Redis, its in-memory sliding window
#                           rescans every request of the last minute on each request, which would
#                           not be its cost in production.
# Auth (JWT bearer on the MCP endpoint), plugins (off by default), caching (database), logging
# (ERROR) and everything else keep their defaults. One worker (the `mcpgateway` CLI's default):
# the machine's cores are shared with the load generator and the upstream, the stateful sessions'
# in-memory event store only works with one worker (several need Redis), and SQLite is the store.
# ContextForge speaks MCP up to 2025-11-25: it answers protocol version 2026-07-28 with HTTP 400.
#
# On failure: a message on stderr naming the step, ContextForge stopped, exit status 1.
set -euo pipefail

die() {
    echo "contextforge-gateway.sh: error: $*" >&2
    if [[ -n "${CF_PID:-}" ]] && kill -0 "$CF_PID" 2>/dev/null; then
        kill "$CF_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$CF_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$CF_PID" 2>/dev/null || true
    fi
    if [[ -n "${LOG:-}" && -f "$LOG" ]]; then
        echo "--- last lines of $LOG ---" >&2
        tail -n 20 "$LOG" | cut -c1-300 >&2 || true
    fi
    exit 1
}
trap 'die "unexpected failure at line $LINENO"' ERR

[[ $# -eq 4 ]] || { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
VENV=$1 UPSTREAM=$2 PORT=$3 WORKDIR=$4
CF_PID=""

MCPGATEWAY=$VENV/bin/mcpgateway
PY=$VENV/bin/python
[[ -x $MCPGATEWAY && -x $PY ]] || die "no $MCPGATEWAY (is mcp-contextforge-gateway installed in $VENV?)"
[[ $PORT =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$PORT'"
[[ $UPSTREAM =~ ^https?:// ]] || die "UPSTREAM_URL must be an http(s) URL, not '$UPSTREAM'"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$WORKDIR/tmp" || die "cannot create $WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)
[[ ! -e $WORKDIR/.env ]] || die "$WORKDIR/.env exists; ContextForge would read it"
BASE=http://127.0.0.1:$PORT
LOG=$WORKDIR/contextforge.log
if curl -s -o /dev/null --max-time 2 "$BASE/"; then
    LOG="" die "something already listens on 127.0.0.1:$PORT"
fi

# JSON helper: jq is not assumed; the venv's Python reads stdin and evaluates an expression on `d`.
json() { "$PY" -c 'import json,sys; d=json.load(sys.stdin); r=eval(sys.argv[1]); print(r if isinstance(r,str) else json.dumps(r))' "$1"; }

secret() { "$PY" -c 'import secrets; print(secrets.token_urlsafe(48))'; }
ADMIN_EMAIL=admin@example.com  # ContextForge's default platform admin
ENV=(
    env -i
    PATH="$VENV/bin:/usr/local/bin:/usr/bin:/bin"
    HOME="$WORKDIR" TMPDIR="$WORKDIR/tmp" LANG=C.UTF-8
    DATABASE_URL="sqlite:///$WORKDIR/mcp.db"
    JWT_SECRET_KEY="$(secret)"
    AUTH_ENCRYPTION_SECRET="$(secret)"
    PLATFORM_ADMIN_EMAIL="$ADMIN_EMAIL"
    PLATFORM_ADMIN_PASSWORD="Aa1!$(secret)"
    BASIC_AUTH_PASSWORD="Aa1!$(secret)"
    SSRF_ALLOW_LOCALHOST=true
    USE_STATEFUL_SESSIONS=true
    RATE_LIMITING_ENABLED=false
)

# --- start -----------------------------------------------------------------------------------
cd "$WORKDIR"
"${ENV[@]}" "$MCPGATEWAY" --host 127.0.0.1 --port "$PORT" </dev/null >"$LOG" 2>&1 &
CF_PID=$!

healthy=""
for _ in $(seq 240); do  # up to ~120 s: first start runs the database migrations (~20 s)
    kill -0 "$CF_PID" 2>/dev/null || die "ContextForge exited during startup (see $LOG)"
    if [[ $(curl -s --max-time 2 "$BASE/health" 2>/dev/null || true) == *'"status":"healthy"'* ]]; then
        healthy=1
        break
    fi
    sleep 0.5
done
[[ -n $healthy ]] || die "ContextForge not healthy at $BASE/health after 120 s"

# --- a bearer token (ContextForge's own tool; the admin user is bootstrapped at startup) --------
TOKEN=$("${ENV[@]}" "$PY" -m mcpgateway.utils.create_jwt_token \
    --username "$ADMIN_EMAIL" --exp 10080 2>>"$LOG") || die "creating a JWT (mcpgateway.utils.create_jwt_token) failed"
[[ $TOKEN =~ ^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]] || die "create_jwt_token printed no JWT"
AUTH="Authorization: Bearer $TOKEN"

# api METHOD PATH [JSON]: prints the body; dies on a non-2xx status
api() {
    local out status
    out=$(curl -s --max-time 60 -X "$1" -H "$AUTH" -H 'Content-Type: application/json' \
        ${3:+--data "$3"} -w '\n%{http_code}' "$BASE$2") || { echo "curl failed: $1 $2" >&2; return 1; }
    status=${out##*$'\n'}
    out=${out%$'\n'*}
    if [[ $status != 2?? ]]; then
        echo "$1 $2 -> HTTP $status: ${out:0:500}" >&2
        return 1
    fi
    printf '%s\n' "$out"
}

# --- register the upstream ---------------------------------------------------------------------
REQ=$(UP="$UPSTREAM" "$PY" -c 'import json,os; print(json.dumps({"name":"bench","url":os.environ["UP"],"transport":"STREAMABLEHTTP"}))')
GW=$(api POST /v1/gateways "$REQ") || die "registering the upstream $UPSTREAM as a gateway (POST /v1/gateways) failed"
GW_ID=$(json 'd["id"]' <<<"$GW") || die "no gateway id in the POST /v1/gateways answer"

TOOLS=""
for _ in $(seq 20); do
    TOOLS=$(api GET "/v1/tools?gateway_id=$GW_ID&limit=0") || die "listing tools (GET /v1/tools) failed"
    [[ $(json 'len(d)' <<<"$TOOLS") -gt 0 ]] && break
    sleep 0.5
done
TOOL_IDS=$(json '[t["id"] for t in d if t.get("gatewayId") == "'"$GW_ID"'"]' <<<"$TOOLS")
[[ $TOOL_IDS != "[]" ]] || die "ContextForge discovered no tools on $UPSTREAM"
READ_TOOL=$(json '[t["name"] for t in d if t.get("gatewayId") == "'"$GW_ID"'" and t.get("originalName") == "read"][0]' <<<"$TOOLS" 2>/dev/null) \
    || die "the upstream has no tool named 'read' (tools: $(json '[t["originalName"] for t in d]' <<<"$TOOLS"))"

# --- a virtual server exposing them (ContextForge serves MCP per virtual server) -------------
SRV=$(api POST /v1/servers "{\"server\":{\"name\":\"bench\",\"description\":\"tools of $GW_ID\",\"associated_tools\":$TOOL_IDS}}") \
    || die "creating the virtual server (POST /v1/servers) failed"
SRV_ID=$(json 'd["id"]' <<<"$SRV") || die "no server id in the POST /v1/servers answer"
# The MCP endpoint is /servers/<id>/mcp (its responses advertise /v1/servers/<id>/mcp as the
# successor, but that path answers 404 in this version).
URL=$BASE/servers/$SRV_ID/mcp

# --- one call through it: initialize, then tools/call read {} ------------------------------------
MCP_H=(-H "$AUTH" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
HDRS=$WORKDIR/tmp/initialize.headers
INIT=$(curl -s --max-time 30 "${MCP_H[@]}" -D "$HDRS" -X POST "$URL" \
    --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"contextforge-gateway.sh","version":"1"}}}') \
    || die "MCP initialize at $URL failed"
[[ $INIT == *'"protocolVersion"'* ]] || die "MCP initialize at $URL: unexpected answer: ${INIT:0:300}"
SESSION=$(tr -d '\r' <"$HDRS" | sed -n 's/^[Mm][Cc][Pp]-[Ss]ession-[Ii][Dd]: *//p' | sed -n 1p)
rm -f "$HDRS"
[[ -n $SESSION ]] || die "MCP initialize at $URL returned no Mcp-Session-Id"
S_H=(-H "Mcp-Session-Id: $SESSION" -H 'MCP-Protocol-Version: 2025-11-25')
curl -s --max-time 30 -o /dev/null "${MCP_H[@]}" "${S_H[@]}" -X POST "$URL" \
    --data '{"jsonrpc":"2.0","method":"notifications/initialized"}' || die "MCP notifications/initialized failed"
CALL=$(curl -s --max-time 30 "${MCP_H[@]}" "${S_H[@]}" -X POST "$URL" \
    --data "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"$READ_TOOL\",\"arguments\":{}}}") \
    || die "MCP tools/call $READ_TOOL at $URL failed"
[[ $CALL == *'"result"'* && $CALL != *'"isError":true'* ]] \
    || die "MCP tools/call $READ_TOOL through ContextForge did not succeed: ${CALL:0:300}"
curl -s --max-time 10 -o /dev/null "${MCP_H[@]}" "${S_H[@]}" -X DELETE "$URL" || true

trap - ERR
echo "url: $URL"
echo "token: $TOKEN"
echo "pid: $CF_PID"
echo "read-tool: $READ_TOOL"
