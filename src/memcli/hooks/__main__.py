"""``python -m memcli.hooks <EventName>``: the Claude Code hook command. Standard library only."""

from memcli.hooks.client import main

main()
