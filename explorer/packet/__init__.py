"""Packet admission: parsing, files, schema checks and native tensor decoding; never imports UI code.

`admit` is resolved lazily, so that importing one small module does not load the whole admission pipeline.
"""

__all__ = ["admit"]


def __getattr__(name: str):
    if name == "admit":
        from explorer.packet.admission import admit

        return admit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
