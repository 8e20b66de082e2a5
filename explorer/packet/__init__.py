"""Packet admission: parsing, files, schema checks and native tensor decoding; never imports UI code.

`from explorer.packet import admit` is resolved lazily: `explorer.analysis.result`
imports `explorer.packet.model`, and admission imports the analysis result
constants through `dtypes`, so importing admission here eagerly would be circular.
"""

__all__ = ["admit"]


def __getattr__(name: str):
    if name == "admit":
        from explorer.packet.admission import admit

        return admit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
