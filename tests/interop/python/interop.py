"""Interop checks: drive a running Warden with the official MCP Python SDK (`mcp` 2.3.0).

Configuration (environment):
  WARDEN_URL          MCP endpoint of a running `warden serve`, e.g. http://127.0.0.1:8650/mcp
  WARDEN_TOKEN        a full-access token (e.g. the admin token printed on first start)
  WARDEN_BOUND_TOKEN  optional: a token bound to project `demo` only, for the
                      "hidden tool == unknown tool" checks (needs a second project
                      with an `other` upstream; see ../README.md)
  WARDEN_BIN          optional: the warden binary, for the stdio legs (`warden stdio`)
  WARDEN_DATA_DIR     optional: data directory for `warden stdio --data-dir`
  WARDEN_RELAY_PREFIX optional: prefix of a 2025-11-25 `warden_fixture notes` upstream visible to
                      WARDEN_TOKEN (run.sh: `relay`); turns on the relay checks (XPORT-4) of the
                      http-2025 leg: progress, logging, elicitation, sampling, cancellation
  INTEROP_ERAS        optional comma list of legs: http-2026, http-2025, stdio, stdio-2025
                      (default: every leg whose configuration is present)

Legs and how each forces its era with the SDK's own option (`Client(mode=...)`):
  http-2026   Streamable HTTP, mode="2026-07-28" (stateless, no initialize); also checks that
              mode="auto" (server/discover probe) settles on 2026-07-28
  http-2025   Streamable HTTP, mode="legacy" (initialize handshake, 2025-11-25)
  stdio       `warden stdio` subprocess, mode="2026-07-28"; also checks mode="auto" settles on it
  stdio-2025  `warden stdio` subprocess, mode="legacy" (2025-11-25)

The relay checks use their own http-2025 connection, whose client declares elicitation and
sampling (by passing `elicitation_callback` / `sampling_callback`) and has a `logging_callback`.

Prints one JSON line per check on stdout; exits 1 on the first failure (2 on bad configuration).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, NoReturn

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    TextContent,
)

if sys.version_info < (3, 11):  # anyio depends on the backport there
    from exceptiongroup import BaseExceptionGroup

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ALL_LEGS = ("http-2026", "http-2025", "stdio", "stdio-2025")
DEMO_TOOLS = (
    "notes__list_notes",
    "notes__add_note",
    "notes__delete_note",
    "warden__whoami",
    "warden__explain",
)
DECISION_KEY = "warden/decision"
RUN_ID = re.compile(r"run_[0-9A-Za-z]+")


class CheckFailed(Exception):
    pass


def emit(leg: str, check: str, ok: bool, **detail: Any) -> None:
    print(json.dumps({"sdk": "python", "leg": leg, "check": check, "ok": ok, **detail}, sort_keys=True), flush=True)


def dump(result: CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def decision(result: CallToolResult) -> dict[str, Any]:
    meta = result.meta or {}
    found = meta.get(DECISION_KEY)
    if not isinstance(found, dict):
        raise CheckFailed(f"no `_meta[{DECISION_KEY!r}]` object in the result: {json.dumps(dump(result))}")
    return found


def scrub(value: Any, tool: str) -> Any:
    """The result with run ids and the called tool's own name replaced by placeholders."""
    text = json.dumps(value, sort_keys=True)
    text = RUN_ID.sub("run_X", text).replace(tool, "TOOL")
    return json.loads(text)


class Leg:
    def __init__(self, name: str) -> None:
        self.name = name

    async def check(self, check: str, body: Callable[[], Any]) -> Any:
        try:
            detail = await body()
        except CheckFailed as e:
            emit(self.name, check, False, error=str(e))
            raise CheckFailed(f"{check}: {e}") from None
        except Exception as e:  # SDK / transport errors are failures of this check too
            if (failed := find_check_failure(e)) is not None:
                emit(self.name, check, False, error=str(failed))
                raise failed from e
            emit(self.name, check, False, error=describe(e))
            raise CheckFailed(f"{check}: {describe(e)}") from e
        emit(self.name, check, True, **(detail or {}))
        return detail


def describe(exc: BaseException) -> str:
    """`Type: message` of the leaf exceptions, unwrapping anyio's exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


async def expect_executed(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    d = decision(result)
    expect(
        d.get("status") == "executed" and not result.is_error,
        f"{tool}: expected status executed and isError false, got {json.dumps(dump(result))}",
    )
    expect(isinstance(d.get("runId"), str) and d["runId"].startswith("run_"), f"{tool}: bad runId in {d}")
    return {"runId": d["runId"], "structuredContent": result.structured_content}


async def expect_denied(client: Client, tool: str, args: dict[str, Any], code: str) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    d = decision(result)
    sc = result.structured_content
    expect(result.is_error, f"{tool}: expected isError true, got {json.dumps(dump(result))}")
    expect(
        d.get("status") == "denied" and d.get("code") == code,
        f"{tool}: expected decision denied/{code}, got {d}",
    )
    expect(
        isinstance(sc, dict)
        and sc.get("status") == "denied"
        and sc.get("code") == code
        and sc.get("runId") == d.get("runId")
        and isinstance(sc.get("message"), str),
        f"{tool}: structuredContent is not the denial contract "
        f"{{status: denied, code: {code}, runId?, message}}: {json.dumps(sc)}",
    )
    # A refusal that recorded nothing (a kill switch, invalid input) names no run.
    return {"code": code, "runId": d.get("runId")}


async def expect_pending(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    d = decision(result)
    sc = result.structured_content
    expect(not result.is_error, f"{tool}: a parked call is not an error, got {json.dumps(dump(result))}")
    expect(
        d.get("status") == "pending_approval" and str(d.get("approvalId", "")).startswith("apr_"),
        f"{tool}: expected decision pending_approval with an approvalId, got {d}",
    )
    expect(
        isinstance(sc, dict)
        and sc.get("status") == "pending_approval"
        and sc.get("approvalId") == d.get("approvalId")
        and sc.get("runId") == d.get("runId")
        and "code" not in sc,
        f"{tool}: structuredContent is not the pending contract: {json.dumps(sc)}",
    )
    return {"approvalId": d["approvalId"], "runId": d["runId"]}


async def tool_names(client: Client) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        names.extend(t.name for t in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return names


async def run_checks(leg: Leg, client: Client, era: str) -> None:
    async def negotiated() -> dict[str, Any]:
        expect(client.protocol_version == era, f"negotiated {client.protocol_version!r}, expected {era!r}")
        return {"protocolVersion": client.protocol_version}

    async def list_demo() -> dict[str, Any]:
        names = await tool_names(client)
        missing = [t for t in DEMO_TOOLS if t not in names]
        expect(not missing, f"tools/list lacks {missing}; got {names}")
        return {"tools": len(names)}

    await leg.check("protocol-version", negotiated)
    await leg.check("tools/list demo tools", list_demo)
    await leg.check("read notes__list_notes executed", lambda: expect_executed(client, "notes__list_notes", {}))
    await leg.check(
        "mutation notes__add_note executed",
        lambda: expect_executed(client, "notes__add_note", {"text": "from python"}),
    )
    await leg.check(
        "dangerous notes__delete_note parked pending_approval",
        lambda: expect_pending(client, "notes__delete_note", {"id": 1}),
    )
    await leg.check(
        "invalid notes__add_note denied VALIDATION",
        lambda: expect_denied(client, "notes__add_note", {}, "VALIDATION"),
    )


async def run_bound_checks(leg: Leg, client: Client, era: str) -> None:
    async def negotiated() -> dict[str, Any]:
        expect(client.protocol_version == era, f"negotiated {client.protocol_version!r}, expected {era!r}")
        return {"protocolVersion": client.protocol_version}

    async def hidden_in_list() -> dict[str, Any]:
        names = await tool_names(client)
        expect("notes__list_notes" in names, f"bound token does not see demo tools: {names}")
        leaked = [n for n in names if n.startswith("other__")]
        expect(not leaked, f"a token bound to project demo lists tools of project other: {leaked}")
        return {"tools": len(names)}

    async def hidden_equals_unknown() -> dict[str, Any]:
        hidden = await client.call_tool("other__echo", {"text": "hi"})
        unknown = await client.call_tool("nope__missing", {"text": "hi"})
        h, u = dump(hidden), dump(unknown)
        expect(hidden.is_error and unknown.is_error, f"both must be errors: hidden={h} unknown={u}")
        sh, su = scrub(h, "other__echo"), scrub(u, "nope__missing")
        expect(
            sh == su,
            "hidden tool answers differently from an unknown tool (run ids and tool names scrubbed):\n"
            f"  other__echo   -> {json.dumps(sh, sort_keys=True)}\n"
            f"  nope__missing -> {json.dumps(su, sort_keys=True)}",
        )
        return {"code": decision(hidden).get("code")}

    await leg.check("bound: protocol-version", negotiated)
    await leg.check("bound: tools/list hides other__*", hidden_in_list)
    await leg.check("bound: other__echo answers like nope__missing", hidden_equals_unknown)


class Heard:
    """What the relay client's callbacks were sent, with arrival times (`time.monotonic()`)."""

    ANSWER = "from-python"
    SAMPLED = "sampled by python"

    def __init__(self) -> None:
        self.logs: list[tuple[float, Any]] = []
        self.elicitations: list[str] = []
        self.samplings: int = 0

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append((time.monotonic(), params.data))

    async def on_elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.elicitations.append(params.message)
        return ElicitResult(action="accept", content={"answer": self.ANSWER})

    async def on_sample(self, context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.samplings += 1
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=self.SAMPLED),
            model="interop-model",
        )

    def client_options(self) -> dict[str, Any]:
        # Passing the callbacks is what declares the elicitation and sampling capabilities.
        return {
            "logging_callback": self.on_log,
            "elicitation_callback": self.on_elicit,
            "sampling_callback": self.on_sample,
        }


async def run_relay_checks(leg: Leg, client: Client, heard: Heard, prefix: str) -> None:
    """XPORT-4 over a 2025-11-25 session: what the upstream sends during a call reaches this client."""
    def tool(name: str) -> str:
        return f"{prefix}__{name}"

    logs_from = len(heard.logs)

    async def negotiated() -> dict[str, Any]:
        expect(client.protocol_version == LEGACY, f"negotiated {client.protocol_version!r}, expected {LEGACY!r}")
        return {"protocolVersion": client.protocol_version}

    async def progress() -> dict[str, Any]:
        seen: list[tuple[float, float]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((time.monotonic(), progress))

        started = time.monotonic()
        result = await client.call_tool(tool("progress"), {"steps": 5, "delay_ms": 100}, progress_callback=on_progress)
        done = time.monotonic()
        expect(
            decision(result).get("status") == "executed" and not result.is_error,
            f"expected an executed call, got {json.dumps(dump(result))}",
        )
        values = [p for _, p in seen]
        expect(len(values) >= 5, f"expected at least 5 progress notifications, got {values}")
        expect(all(a < b for a, b in zip(values, values[1:])), f"progress is not increasing: {values}")
        # Relayed while the call ran, not all at the end: the first came well before the result.
        lead = done - seen[0][0]
        expect(
            lead >= 0.2,
            f"the first progress arrived only {lead * 1000:.0f} ms before the result "
            f"(call took {(done - started) * 1000:.0f} ms)",
        )
        return {"progress": values, "firstBeforeResultMs": round(lead * 1000), "callMs": round((done - started) * 1000)}

    async def logging_messages() -> dict[str, Any]:
        # They travel on the call's stream ahead of its result; allow the SDK a moment to dispatch.
        with anyio.move_on_after(5):
            while len(heard.logs) == logs_from:
                await anyio.sleep(0.05)
        data = [d for _, d in heard.logs[logs_from:]]
        expect(len(data) >= 1, "no notifications/message reached the logging callback")
        expect(any(isinstance(d, dict) and "step" in d for d in data), f"unexpected log data: {data}")
        return {"logs": len(data)}

    async def elicitation() -> dict[str, Any]:
        question = "which account? (python)"
        result = await client.call_tool(tool("ask"), {"question": question})
        sc = result.structured_content
        expect(
            not result.is_error and isinstance(sc, dict) and sc.get("action") == "accept",
            f"expected the accepted ElicitResult, got {json.dumps(dump(result))}",
        )
        answer = (sc.get("content") or {}).get("answer")
        expect(answer == Heard.ANSWER, f"the upstream got answer {answer!r}, expected {Heard.ANSWER!r}")
        expect(heard.elicitations == [question], f"the elicitation callback was asked {heard.elicitations}")
        return {"answer": answer}

    async def sampling() -> dict[str, Any]:
        result = await client.call_tool(tool("sample"), {"prompt": "hi"})
        text = json.dumps(dump(result))
        expect(not result.is_error and Heard.SAMPLED in text, f"the sampled text is not in the result: {text}")
        expect(heard.samplings == 1, f"the sampling callback ran {heard.samplings} times, expected once")
        return {"model": (result.structured_content or {}).get("model")}

    async def cancellations() -> int:
        result = await client.call_tool(tool("cancellations"), {})
        n = (result.structured_content or {}).get("cancellations")
        expect(isinstance(n, int), f"bad {tool('cancellations')} result: {json.dumps(dump(result))}")
        return n

    async def cancellation() -> dict[str, Any]:
        before = await cancellations()
        # Leaving the scope cancels the call; the SDK then sends notifications/cancelled.
        result: CallToolResult | None = None
        with anyio.move_on_after(1.0) as scope:
            result = await client.call_tool(tool("slow"), {"ms": 30000})
        if result is not None:
            raise CheckFailed(f"{tool('slow')} returned before it was cancelled: {json.dumps(dump(result))}")
        after = before
        with anyio.move_on_after(10):
            while (after := await cancellations()) < before + 1:
                await anyio.sleep(0.1)
        expect(after >= before + 1, f"the upstream never saw the cancellation (cancellations {before} -> {after})")
        return {"cancellations": after, "before": before}

    await leg.check("relay: protocol-version", negotiated)
    await leg.check("relay: progress arrives in order while the call runs", progress)
    await leg.check("relay: log messages reach the logging callback", logging_messages)
    await leg.check("relay: elicitation answered by the client reaches the upstream", elicitation)
    await leg.check("relay: sampling answered by the client reaches the upstream", sampling)
    await leg.check("relay: client cancellation reaches the upstream", cancellation)


@asynccontextmanager
async def http_client(url: str, token: str, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0, read=60.0),
    ) as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode=mode, **options) as client:
            yield client


@asynccontextmanager
async def stdio_client(binary: str, data_dir: str | None, token: str, mode: str) -> AsyncIterator[Client]:
    args = ["stdio"] + (["--data-dir", data_dir] if data_dir else [])
    env = {"WARDEN_TOKEN": token, "WARDEN_LOG": os.environ.get("INTEROP_WARDEN_LOG", "warn")}
    params = StdioServerParameters(command=binary, args=args, env=env)
    async with Client(params, mode=mode) as client:
        yield client


async def run_leg(name: str, cfg: dict[str, str | None]) -> None:
    leg = Leg(name)
    url, token, bound = cfg["url"], cfg["token"], cfg["bound"]
    binary, data_dir = cfg["bin"], cfg["data_dir"]

    modern = name in ("http-2026", "stdio")
    mode, era = (MODERN, MODERN) if modern else ("legacy", LEGACY)
    if name.startswith("http-"):
        assert url and token

        def connect(tok: str, mode: str = mode) -> Any:
            return http_client(url, tok, mode)

    else:
        assert binary and token

        def connect(tok: str, mode: str = mode) -> Any:
            return stdio_client(binary, data_dir, tok, mode)

    if modern:

        async def auto_probe() -> dict[str, Any]:
            async with connect(token, "auto") as client:
                expect(
                    client.protocol_version == MODERN,
                    f"mode=auto (server/discover probe) settled on {client.protocol_version!r}, expected {MODERN}",
                )
                return {"protocolVersion": client.protocol_version}

        await leg.check("mode=auto discovers 2026-07-28", auto_probe)

    async with connect(token) as client:
        await run_checks(leg, client, era)
    if bound:
        async with connect(bound) as client:
            await run_bound_checks(leg, client, era)
    else:
        emit(name, "bound-token checks", True, skipped="WARDEN_BOUND_TOKEN not set")
    if name == "http-2025":
        if relay := cfg["relay"]:
            heard = Heard()
            async with http_client(url, token, "legacy", **heard.client_options()) as client:
                await run_relay_checks(leg, client, heard, relay)
        else:
            emit(name, "relay checks", True, skipped="WARDEN_RELAY_PREFIX not set")


def usage_error(message: str) -> NoReturn:
    print(f"interop.py: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def configure() -> tuple[list[str], dict[str, str | None]]:
    cfg = {
        "url": os.environ.get("WARDEN_URL") or None,
        "token": os.environ.get("WARDEN_TOKEN") or None,
        "bound": os.environ.get("WARDEN_BOUND_TOKEN") or None,
        "bin": os.environ.get("WARDEN_BIN") or None,
        "data_dir": os.environ.get("WARDEN_DATA_DIR") or None,
        "relay": os.environ.get("WARDEN_RELAY_PREFIX") or None,
    }
    if not cfg["token"]:
        usage_error("WARDEN_TOKEN is required")
    available = [
        leg
        for leg in ALL_LEGS
        if (leg.startswith("http-") and cfg["url"]) or (leg.startswith("stdio") and cfg["bin"])
    ]
    requested = os.environ.get("INTEROP_ERAS", "").strip()
    if not requested:
        if not available:
            usage_error("set WARDEN_URL (http legs) and/or WARDEN_BIN (stdio legs)")
        return available, cfg
    legs = [leg.strip() for leg in requested.split(",") if leg.strip()]
    for leg in legs:
        if leg not in ALL_LEGS:
            usage_error(f"unknown leg {leg!r} in INTEROP_ERAS (known: {', '.join(ALL_LEGS)})")
        if leg not in available:
            need = "WARDEN_URL" if leg.startswith("http-") else "WARDEN_BIN"
            usage_error(f"leg {leg!r} needs {need}")
    return legs, cfg


def find_check_failure(exc: BaseException) -> CheckFailed | None:
    """The CheckFailed inside `exc`, which anyio task groups may have wrapped in exception groups."""
    if isinstance(exc, CheckFailed):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := find_check_failure(inner)) is not None:
                return found
    return None


async def main() -> int:
    legs, cfg = configure()
    for name in legs:
        try:
            await run_leg(name, cfg)
        except Exception as e:
            if (failed := find_check_failure(e)) is not None:
                print(f"interop.py: FAILED in leg {name}: {failed}", file=sys.stderr, flush=True)
                return 1
            # connect/teardown errors outside a named check
            emit(name, "connect", False, error=describe(e))
            print(f"interop.py: FAILED in leg {name}: {describe(e)}", file=sys.stderr, flush=True)
            return 1
    print(json.dumps({"sdk": "python", "summary": "all checks passed", "legs": legs}), flush=True)
    return 0


if __name__ == "__main__":
    # SDK warnings (e.g. "Session termination failed: 202") go to stderr, labelled, never to stdout.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(asyncio.run(main()))
