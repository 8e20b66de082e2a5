"""Foundations every layer builds on (records, reads, pools, writes, caches); no numerics, no UI.

Nothing here imports another explorer package.
"""
