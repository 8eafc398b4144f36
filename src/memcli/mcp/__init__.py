"""The MCP face: memcli's tools over stdio (`memcli mcp`) and Streamable HTTP (`memcli serve`)."""
