"""The MCP face: memcli's tools, resources and prompts over stdio (`memcli mcp`: `front` answers the handshake from
`catalog.json` before the SDK is loaded, `stdio` runs the SDK after it) and Streamable HTTP or SSE (`memcli serve`)."""
