"""``python -m memcli``: the same as the ``memcli`` command (the hook client starts the server this way)."""

from memcli.cli.app import main

if __name__ == "__main__":
    main()
