"""memcli: one shared, persistent memory for all of your AI agents."""

__version__ = "0.1.0"
