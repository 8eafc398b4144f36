"""What memcli's MCP tools return: the CLI's JSON shapes as tool results (used by every tool module)."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent


def json_result(data: Any) -> CallToolResult:
    """The CLI JSON shape as text (what a model reads) and as structured content (objects only)."""
    text = json.dumps(data, ensure_ascii=False)
    structured = data if isinstance(data, dict) else {"result": data}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)
