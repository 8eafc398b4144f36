"""The task board agents share: :class:`~memcli.board.service.BoardService` (cards, moves recorded as memories,
versions), its two LanceDB tables, and the jobs the user configured by name.

May import: the shared modules and ``memcli.memory``.
"""
