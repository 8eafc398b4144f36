"""Team mode: spaces (namespaces with members and their tokens), what a space does with a stale update, a
:class:`~memcli.memory.service.MemoryService`-shaped client of a remote memcli server, and sync between a
personal store and a space.

May import: the shared modules, ``memcli.embedders``, ``memcli.facts``, ``memcli.memory`` and ``memcli.distill``.
"""
