"""OAuth check: the official MCP Python SDK signs in to Warden with client credentials.

The SDK's own `ClientCredentialsOAuthProvider` does everything a machine client does: it
meets Warden's 401, reads the protected-resource metadata the challenge points to, finds the
authorization server there, obtains a token for exactly Warden's resource (RFC 8707) and
sends it. The token is mapped to a service account by the issuer's `clients` (RUN-2
service-account mode). Then it lists tools and calls one, in the era the SDK picks itself.

Configuration (environment):
  WARDEN_URL       MCP endpoint, e.g. http://127.0.0.1:8600/mcp
  OIDC_ISSUER      the authorization server's issuer URL
  OIDC_CLIENT_ID, OIDC_CLIENT_SECRET   a client-credentials client
  EXPECT_PRINCIPAL the principal Warden should report (e.g. serviceAccount:deploy-bot)
  EXPECT_TOOL      a tool that must be listed and is called with {} (e.g. notes__list_notes)

Prints one JSON line per check; exits 1 on a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class MemoryStorage:
    """Tokens and client information for the length of the run."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def report(check: str, ok: bool, detail: object = None) -> None:
    print(json.dumps({"sdk": "python", "check": check, "ok": ok, "detail": detail}), flush=True)
    if not ok:
        sys.exit(1)


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def main() -> None:
    url = os.environ["WARDEN_URL"]
    storage = MemoryStorage()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=os.environ["OIDC_CLIENT_ID"],
        client_secret=os.environ["OIDC_CLIENT_SECRET"],
        token_endpoint_auth_method="client_secret_post",
        issuer=os.environ["OIDC_ISSUER"],
    )
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30.0)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            report("signed in", storage.tokens is not None, client.protocol_version)
            tools = [t.name for t in (await client.list_tools()).tools]
            expected = os.environ["EXPECT_TOOL"]
            report("tools listed", expected in tools, tools)
            whoami = json.loads(text_of(await client.call_tool("warden__whoami", {})))["data"]
            report(
                "acts as the mapped service account",
                whoami.get("principal") == os.environ["EXPECT_PRINCIPAL"]
                and whoami.get("mode") == "service-account",
                whoami,
            )
            called = await client.call_tool(expected, {})
            report("tool called", not called.is_error, text_of(called)[:200])


if __name__ == "__main__":
    asyncio.run(main())
