"""Foundations every layer builds on (records, reads, pools, writes, caches); no numerics, no UI.

Nothing here imports another explorer package: `record` (frozen records), `bounded` (reads with a byte limit),
`parallel` and `executors` (thread pools whose results never depend on the thread count), `safeio` (new files
written whole or not at all), `single_flight` (one computation shared by every caller that asks while it runs),
`cache` (the one bounded LRU cache) and `formatting` (the one number format).
"""
