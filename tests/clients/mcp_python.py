"""Drives `questions mcp` with the official MCP Python SDK, as a Python agent would: one
call per line of the JSON list on stdin ({"tool", "arguments"}), each answered with one
JSON line on stdout: {"is_error", "structured", "text"}; then a last line
{"protocol_version"} naming the revision the session negotiated.

argv: the connection mode ("legacy": the initialize handshake; "auto": server/discover,
as the SDK does by default; or a revision such as "2026-07-28"), then the server's
command, or the URL of `questions serve`'s /mcp (Streamable HTTP, with the token in
QUESTIONS_TOKEN as `Authorization: Bearer`). The client shows forms: its person picks the
first option of each choice and types "from python" into each text field (or, with
QUESTIONS_TEST_FORM=decline, declines them). A server started as a command gets the
SDK's default environment, and the variables QUESTIONS_TEST_PASS_ENV names (comma-separated). A call {"list_tools": true} is answered with
{"tools": [names]}; one with "progress": true also counts the progress notifications the
call received ({"progress_count"}) and says how long the call took ({"seconds"})."""

import asyncio
import json
import os
import sys
import time

from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def person(_context, params):
    if os.environ.get("QUESTIONS_TEST_FORM") == "decline":
        return types.ElicitResult(action="decline")
    schema = params.requested_schema
    if not isinstance(schema, dict):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    content = {}
    for key, prop in schema.get("properties", {}).items():
        if key.endswith("_own"):
            continue
        if "oneOf" in prop:
            content[key] = prop["oneOf"][0]["const"]
        elif prop.get("type") == "array":
            content[key] = prop["items"]["enum"][:1]
        else:
            content[key] = "from python"
    return types.ElicitResult(action="accept", content=content)


async def main() -> None:
    calls = json.load(sys.stdin)
    mode, command = sys.argv[1], sys.argv[2:]
    if command[0].startswith("http"):
        headers = {"Authorization": f"Bearer {os.environ['QUESTIONS_TOKEN']}"}
        http = create_mcp_http_client(headers=headers)
        server = streamable_http_client(command[0], http_client=http)
    else:
        names = [n for n in os.environ.get("QUESTIONS_TEST_PASS_ENV", "").split(",") if n]
        env = {n: os.environ[n] for n in names if n in os.environ} or None
        server = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with Client(
        server,
        mode=mode,
        elicitation_callback=person,
        client_info=types.Implementation(name="python-sdk", version="1"),
    ) as client:
        for call in calls:
            if call.get("list_tools"):
                listed = await client.list_tools()
                print(json.dumps({"tools": sorted(t.name for t in listed.tools)}), flush=True)
                continue
            counted = []

            async def progress(done, total, message):
                counted.append(done)

            started = time.monotonic()
            try:
                if call.get("progress"):
                    result = await client.call_tool(
                        call["tool"], call["arguments"], progress_callback=progress
                    )
                else:
                    result = await client.call_tool(call["tool"], call["arguments"])
                text = "".join(getattr(c, "text", "") for c in result.content)
                is_error = getattr(result, "is_error", None)
                if is_error is None:
                    is_error = getattr(result, "isError", False)
                structured = getattr(result, "structured_content", None)
                if structured is None:
                    structured = getattr(result, "structuredContent", None)
                out = {"is_error": bool(is_error), "structured": structured, "text": text}
                if call.get("progress"):
                    out["progress_count"] = len(counted)
                    out["seconds"] = time.monotonic() - started
            except Exception as e:  # the SDK's own refusal: what an agent would see
                out = {"is_error": True, "structured": None, "text": f"client error: {e}"}
            print(json.dumps(out), flush=True)
        print(json.dumps({"protocol_version": client.protocol_version}), flush=True)


asyncio.run(main())
