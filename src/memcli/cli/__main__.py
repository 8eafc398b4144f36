"""``python -m memcli.cli``: the same as the ``memcli`` command (the hook client starts the server this way,
with the interpreter it runs on, so no PATH lookup or shim is involved)."""

from memcli.cli.fast import main

if __name__ == "__main__":
    main()
