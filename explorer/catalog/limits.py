"""The limits of a triage run (worker count, per-packet time), importable without loading machinery."""

MAX_JOBS = 64  # worker processes (or local:N Dask workers) at most, whatever is asked
DEFAULT_TIMEOUT_S = 300.0  # seconds one packet may take; the Qwen-size packet takes about one
