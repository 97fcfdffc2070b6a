"""One client's session through a load balancer in front of several Warden replicas, with the
official MCP Python SDK (`mcp` 2.3.0): run by ../../cluster/cluster.sh.

`python cluster.py across STOP KILLED`: one 2025-11-25 session reading, through the kill -9 of a
replica, until the file STOP exists; it must go on after the file KILLED appears.

`python cluster.py MODE` (MODE: `legacy` — a 2025-11-25 session — or `auto`): the tools are
listed, a read executes, an ordinary mutation executes, a dangerous mutation is parked and its
approval id reaches the client; the approver approves it through the balancer, the client
fetches the outcome through the balancer until it is `executed`; then the same session goes
on with more reads. Every request goes wherever the balancer sends it.

Environment: WARDEN_URL (the balancer's /mcp), WARDEN_TOKEN (the client), APPROVER_TOKEN.
One JSON line per check; exit 1 at the first failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


class CheckFailed(Exception):
    pass


def emit(mode: str, check: str, ok: bool, **detail: Any) -> None:
    print(json.dumps({"sdk": "python", "mode": mode, "check": check, "ok": ok, **detail}, default=str), flush=True)
    if not ok:
        raise CheckFailed(check)


def decision(result: Any) -> dict[str, Any]:
    return dict((result.meta or {}).get("warden/decision", {}))


async def run(url: str, token: str, approver: str, mode: str) -> None:
    base = url.removesuffix("/mcp")
    timeout = httpx2.Timeout(30.0, read=60.0)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            emit(mode, "listed", {"notes__list_notes", "notes__add_note", "vault__add_note"} <= set(names), tools=names)
            result = await client.call_tool("notes__list_notes", {})
            emit(mode, "read executes", decision(result).get("status") == "executed" and not result.is_error, decision=decision(result))
            result = await client.call_tool("notes__add_note", {"text": f"cluster {mode}"})
            emit(mode, "mutation executes", decision(result).get("status") == "executed" and not result.is_error, decision=decision(result))
            result = await client.call_tool("vault__add_note", {"text": f"cluster {mode} parked"})
            parked = dict(result.structured_content or {})
            approval = str(parked.get("approvalId", ""))
            emit(mode, "dangerous mutation parked, approval id reaches the client",
                 parked.get("status") == "pending_approval" and approval.startswith("apr_"), result=parked)
            async with httpx2.AsyncClient(timeout=timeout) as api:
                decided = await api.post(f"{base}/api/v1/approvals/{approval}/approve",
                                         headers={"Authorization": f"Bearer {approver}"},
                                         json={"reason": "cluster.py"})
                emit(mode, "approved through the balancer", decided.status_code == 200, status=decided.status_code, body=decided.text)
                status = None
                for _ in range(100):
                    got = await api.get(f"{base}/api/v1/approvals/{approval}", headers={"Authorization": f"Bearer {token}"})
                    status = got.json().get("status") if got.status_code == 200 else got.status_code
                    if status == "executed":
                        break
                    await asyncio.sleep(0.1)
                emit(mode, "the approved call executed", status == "executed", status=status)
            for i in range(9):
                result = await client.call_tool("notes__list_notes", {})
                if decision(result).get("status") != "executed":
                    emit(mode, f"the session goes on (read {i + 1})", False, decision=decision(result))
            emit(mode, "the session goes on", True)


async def across(url: str, token: str, stop: str, killed: str) -> None:
    """One 2025-11-25 session that reads until the file STOP exists, across a replica's kill -9
    (announced by the file KILLED): the reads answered after the kill, on the same session.
    STOP.ready is created after the first read.

    Every wait is bounded: a request that was in flight on the killed replica may never be
    answered (the SDK has no default request timeout), so each read gives up after 2 s and
    counts as failed; the verdict is printed before the session is closed, and closing it is
    given 10 s."""
    timeout = httpx2.Timeout(10.0, read=30.0)
    before = after = failed = 0
    verdict = False
    # Outside the session's own scopes, so that they nest; its deadline is set once the
    # verdict is printed, and bounds only the session's closing.
    with anyio.CancelScope() as closing:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as hc:
            async with Client(streamable_http_client(url, http_client=hc), mode="legacy") as client:
                while not os.path.exists(stop):
                    try:
                        result = await client.call_tool("notes__list_notes", {}, read_timeout_seconds=2.0)
                    except Exception:  # the request was on the replica that was killed
                        failed += 1
                        await asyncio.sleep(0.1)
                        continue
                    ok = decision(result).get("status") == "executed"
                    if not ok:
                        emit("legacy", "a read across the kill", False, decision=decision(result))
                    if os.path.exists(killed):
                        after += 1
                    else:
                        before += 1
                        if before == 1:
                            open(stop + ".ready", "w").close()
                    await asyncio.sleep(0.05)
                verdict = before > 0 and after > 0 and failed <= 5
                print(json.dumps({"sdk": "python", "mode": "legacy",
                                  "check": "one session goes on across a replica's kill -9", "ok": verdict,
                                  "reads_before": before, "reads_after": after, "failed": failed}), flush=True)
                closing.deadline = anyio.current_time() + 10
    if closing.cancelled_caught:
        print(json.dumps({"sdk": "python", "mode": "legacy", "note": "closing the session took over 10 s"}), flush=True)
    if not verdict:
        raise CheckFailed("one session goes on across a replica's kill -9")


async def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "across":
        url, token = os.environ.get("WARDEN_URL"), os.environ.get("WARDEN_TOKEN")
        try:
            await across(str(url), str(token), sys.argv[2], sys.argv[3])
        except CheckFailed:
            return 1
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in ("legacy", "auto"):
        print("usage: cluster.py legacy|auto|across STOP KILLED", file=sys.stderr)
        return 2
    url, token, approver = (os.environ.get(k) for k in ("WARDEN_URL", "WARDEN_TOKEN", "APPROVER_TOKEN"))
    if not url or not token or not approver:
        print("cluster.py: WARDEN_URL, WARDEN_TOKEN and APPROVER_TOKEN are required", file=sys.stderr)
        return 2
    try:
        await run(url, token, approver, sys.argv[1])
    except CheckFailed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
