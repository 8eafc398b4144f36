"""The HTTP face: `memcli serve` (REST under /api, MCP at /mcp, hook routes, /health)."""
