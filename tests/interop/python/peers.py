"""Popular upstreams through Warden with the official MCP Python SDK (`mcp` 2.3.0).

Run by ../peers.sh, which starts Warden with the upstreams `memory`, `everything`, `apps`,
`dual` and `modern` in project `peers` and the admin at autonomy L1. For `mode="auto"` and
`mode="legacy"`, and for each upstream: the tools are listed; a read executes; a mutation is
parked and its approval id reaches the client (in `structuredContent`, valid against the tool's
advertised output schema — the SDK checks it); bad arguments are denied with `VALIDATION`.

Environment: WARDEN_URL, WARDEN_TOKEN. One JSON line per check; exit 1 on the first failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# upstream: (read tool, its arguments, mutation, its arguments, bad arguments for the mutation)
PEERS: dict[str, tuple[str, dict[str, Any], str | None, dict[str, Any], dict[str, Any]]] = {
    "memory": (
        "read_graph",
        {},
        "create_entities",
        {"entities": [{"name": "warden", "entityType": "gateway", "observations": ["governs"]}]},
        {"entities": "not a list"},
    ),
    "everything": ("echo", {"message": "hi"}, "gzip-file-as-resource", {}, {"outputType": "nope"}),
    "apps": ("get-time", {}, None, {}, {}),
    "dual": ("echo", {"text": "hi"}, "add_note", {"text": "from python"}, {"text": 7}),
    "modern": ("echo", {"text": "hi"}, "add_note", {"text": "from python"}, {"text": 7}),
}


class CheckFailed(Exception):
    pass


def emit(mode: str, check: str, ok: bool, **detail: Any) -> None:
    line = {"sdk": "python", "mode": mode, "check": check, "ok": ok, **detail}
    print(json.dumps(line, sort_keys=True, default=str), flush=True)
    if not ok:
        raise CheckFailed(check)


def structured(result: Any) -> dict[str, Any]:
    return dict(result.structured_content or {})


async def run(url: str, token: str, mode: str) -> None:
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0, read=60.0)
    ) as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode=mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for upstream, (read, read_args, mutation, args, bad) in PEERS.items():
                name = f"{upstream}__{read}"
                emit(mode, f"{upstream}: listed", name in tools, tool=name)
                result = await client.call_tool(name, read_args)
                decision = (result.meta or {}).get("warden/decision", {})
                emit(mode, f"{upstream}: read executes", decision.get("status") == "executed" and not result.is_error, decision=decision)
                if mutation is None:
                    continue
                name = f"{upstream}__{mutation}"
                result = await client.call_tool(name, args)
                parked = structured(result)
                emit(
                    mode,
                    f"{upstream}: mutation parked, approval id reaches the client",
                    parked.get("status") == "pending_approval"
                    and str(parked.get("approvalId", "")).startswith("apr_")
                    and not result.is_error,
                    result=parked,
                )
                result = await client.call_tool(name, bad)
                denied = structured(result)
                emit(
                    mode,
                    f"{upstream}: bad arguments denied",
                    result.is_error is True and denied.get("code") == "VALIDATION",
                    result=denied,
                )
            apps = tools.get("apps__get-time")
            ui = ((apps.meta or {}) if apps else {}).get("ui", {})
            emit(mode, "apps: the tool's MCP App passes through", ui.get("resourceUri") == "ui://get-time/mcp-app.html", meta=ui)


async def main() -> int:
    url, token = os.environ.get("WARDEN_URL"), os.environ.get("WARDEN_TOKEN")
    if not url or not token:
        print("peers.py: WARDEN_URL and WARDEN_TOKEN are required", file=sys.stderr)
        return 2
    try:
        for mode in ("auto", "legacy"):
            await run(url, token, mode)
    except CheckFailed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
