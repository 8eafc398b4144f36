"""What texts say about a fact: the same-fact test (two memories state the same fact, or another value for it)
and its word lists. Pure functions over text: no storage, no embedder.

May import: the shared modules at the top of ``memcli`` only.
"""
