"""The Functions MCP extension's side of MCP, for any host that serves tools as it does: the JSON-RPC server
(`protocol.py`), the Streamable HTTP transport at `/runtime/webhooks/mcp` (`streamable_http.py`), and a tool as its
`mcpToolTrigger` binding declares it, listed and its result read (`tool_binding.py`).

The local host's endpoint (emulating the extension under `serve`) and the standalone worker's ASGI app both serve
through it. Knows MCP and the binding's fields; nothing of conversations, routes or this package's tools.
"""
