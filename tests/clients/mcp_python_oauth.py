"""Signs in to `questions serve`'s /mcp with the MCP Python SDK's own OAuth client
(`OAuthClientProvider`: the 401's resource metadata, the authorization server's metadata,
dynamic client registration, PKCE S256, the resource indicator), as an MCP host would,
then makes calls as mcp_python.py does.

argv: the /mcp URL. The person's browser is stood in for by HTTP with their signed-in
session cookie (QUESTIONS_TEST_COOKIE, "name=value"): the SDK's redirect handler opens
the authorization URL with it, reads the consent page, and submits its Allow button with
the page's own fields (QUESTIONS_TEST_CONSENT=deny: Deny). stdin: a JSON list of calls,
{"list_tools": true} or {"tool", "arguments"}. stdout, one JSON line each: {"consent":
the page's heading}, then each call's {"tools"} or {"is_error", "structured", "text"},
then {"tokens": {"access_token", "refresh_token"}, "client_id"} for the test's own checks
of what was issued. The CA is SSL_CERT_FILE's."""

import asyncio
import html
import json
import os
import re
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client, types
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata


class Memory:
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


async def main() -> None:
    calls = json.load(sys.stdin)
    url = sys.argv[1]
    cookie = os.environ["QUESTIONS_TEST_COOKIE"]
    decision = os.environ.get("QUESTIONS_TEST_CONSENT", "allow")
    came_back: asyncio.Future = asyncio.get_running_loop().create_future()

    async def browser(authorization_url: str) -> None:
        # The person's browser: the consent page, then their decision.
        async with httpx2.AsyncClient(follow_redirects=False) as web:
            page = await web.get(
                authorization_url, headers={"Cookie": cookie, "Accept": "text/html"}
            )
            if page.status_code != 200:
                raise RuntimeError(f"consent page {page.status_code}: {page.text[:300]}")
            heading = re.search(r"<h1>(.*?)</h1>", page.text)
            print(json.dumps({"consent": html.unescape(heading.group(1)) if heading else None}),
                  flush=True)
            fields = {
                html.unescape(k): html.unescape(v)
                for k, v in re.findall(
                    r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text
                )
            }
            fields["decision"] = decision
            action = urlparse(authorization_url)._replace(path="/oauth/authorize", query="")
            sent = await web.post(
                action.geturl(),
                data=fields,
                headers={"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Accept": "text/html"},
            )
            if sent.status_code != 303:
                raise RuntimeError(f"consent {sent.status_code}: {sent.text[:300]}")
            query = parse_qs(urlparse(sent.headers["location"]).query)
            came_back.set_result({k: v[0] for k, v in query.items()})

    async def callback() -> AuthorizationCodeResult:
        back = await came_back
        if "code" not in back:
            raise RuntimeError(f"no code: {back}")
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))

    memory = Memory()
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK host",
            redirect_uris=["http://127.0.0.1:9/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=memory,
        redirect_handler=browser,
        callback_handler=callback,
    )
    http = create_mcp_http_client(auth=auth)
    async with Client(
        streamable_http_client(url, http_client=http),
        client_info=types.Implementation(name="python-sdk-oauth", version="1"),
    ) as client:
        for call in calls:
            if call.get("list_tools"):
                listed = await client.list_tools()
                print(json.dumps({"tools": sorted(t.name for t in listed.tools)}), flush=True)
                continue
            try:
                result = await client.call_tool(call["tool"], call["arguments"])
                text = "".join(getattr(c, "text", "") for c in result.content)
                is_error = getattr(result, "is_error", None)
                if is_error is None:
                    is_error = getattr(result, "isError", False)
                structured = getattr(result, "structured_content", None)
                if structured is None:
                    structured = getattr(result, "structuredContent", None)
                out = {"is_error": bool(is_error), "structured": structured, "text": text}
            except Exception as e:
                out = {"is_error": True, "structured": None, "text": f"client error: {e}"}
            print(json.dumps(out), flush=True)
    tokens = memory.tokens
    print(json.dumps({
        "tokens": {
            "access_token": tokens.access_token if tokens else None,
            "refresh_token": tokens.refresh_token if tokens else None,
        },
        "client_id": memory.client.client_id if memory.client else None,
    }), flush=True)


asyncio.run(main())
