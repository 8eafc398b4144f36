"""Claude Code hooks: a tiny stdlib-only client (``python -m memcli.hooks <Event>``) and the server side.

The client (:mod:`memcli.hooks.client`) runs once per hook event; it imports only the standard library and
forwards the payload to the warm ``memcli serve`` process, which mounts :func:`memcli.hooks.routes.hook_routes`.
Nothing in this ``__init__`` may import more than the standard library: the client pays for every import.
"""

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
