"""The memory core: :class:`~memcli.memory.service.MemoryService` (the API every face calls: remember, recall,
list, get, update, forget, check_duplicate, export, import, stats) over :class:`~memcli.memory.store.MemoryStore`
(the LanceDB repository: schema, rows, reads, indexes, compaction, the audit log, object storage), with hybrid
search's ranking and the records an import reads.

May import: the shared modules at the top of ``memcli``, ``memcli.embedders`` and ``memcli.facts``. Never a face,
the board, team mode or consolidation.
"""
