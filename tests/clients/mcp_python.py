"""Drives `questions mcp` with the official MCP Python SDK, as a Python agent would: one
call per line of the JSON list on stdin ({"tool", "arguments"}), each answered with one
JSON line on stdout: {"is_error", "structured", "text"}. argv: the server's command."""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    calls = json.load(sys.stdin)
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for call in calls:
                try:
                    result = await session.call_tool(call["tool"], call["arguments"])
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    # The SDK's 1.x names, or 2.x's.
                    is_error = getattr(result, "is_error", None)
                    if is_error is None:
                        is_error = getattr(result, "isError", False)
                    structured = getattr(result, "structured_content", None)
                    if structured is None:
                        structured = getattr(result, "structuredContent", None)
                    out = {"is_error": bool(is_error), "structured": structured, "text": text}
                except Exception as e:  # the SDK's own refusal: what an agent would see
                    out = {"is_error": True, "structured": None, "text": f"client error: {e}"}
                print(json.dumps(out), flush=True)


asyncio.run(main())
