"""Packet admission: parsing, files, schema checks and native tensor decoding; never imports UI code.

`from explorer.packet import admit` is resolved lazily, so that importing one small
module (`explorer.packet.model`, `explorer.packet.dtypes`) does not load the whole
admission pipeline with it.
"""

__all__ = ["admit"]


def __getattr__(name: str):
    if name == "admit":
        from explorer.packet.admission import admit

        return admit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
