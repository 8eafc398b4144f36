"""The `memcli` command line (typer + rich). One module per command; each command is one core call."""
