"""Consolidation: :class:`~memcli.distill.service.DistillService` plans and applies a distill (archive expired
memories, merge restatements of one fact into its best-written member, list conflicts until settled, promote what
several agents hold and is not outdated), records each run
for an exact undo, and optionally condenses a merged group with an LLM (also the one chat client the hooks' summaries
and a team space's LLM merge use).

May import: the shared modules, ``memcli.embedders``, ``memcli.facts`` and ``memcli.memory``.
"""
