"""Benchmark of the strict JSON checks on hostile 256 KiB documents.

Prints numbers only, asserts nothing, writes nothing.

For each document (the escaped-quote string `{"a": "\\"\\"...` that a backtracking
string scan takes minutes on, arrays nested to the limit's size, one long plain
string) it prints the median seconds of `parse_json_object` and the outcome.

    python benchmarks/bench_json.py
"""

from __future__ import annotations

import statistics
import time

from explorer.packet.files import JSON_SIZE_LIMIT
from explorer.packet.jsonparse import parse_json_object

RUNS = 5
HEADER = b'{"a": "'
DOCUMENTS = {
    "escaped quotes (unterminated)": HEADER + b'\\"' * ((JSON_SIZE_LIMIT - len(HEADER)) // 2),
    "escaped quotes (terminated)": HEADER + b'\\"' * ((JSON_SIZE_LIMIT - len(HEADER) - 2) // 2) + b'"}',
    "nested arrays": b'{"a":' + b"[" * ((JSON_SIZE_LIMIT - 6) // 2) + b"]" * ((JSON_SIZE_LIMIT - 6) // 2) + b"}",
    "plain string": HEADER + b"x" * (JSON_SIZE_LIMIT - len(HEADER) - 2) + b'"}',
}


def main() -> None:
    for label, document in DOCUMENTS.items():
        seconds = []
        for _ in range(RUNS):
            started = time.perf_counter()
            parsed = parse_json_object(document)
            seconds.append(time.perf_counter() - started)
        outcome = "refused" if parsed.error is not None else "parsed"
        print(f"{label:32s} {len(document):7d} bytes  median {statistics.median(seconds):.3f} s  {outcome}")


if __name__ == "__main__":
    main()
