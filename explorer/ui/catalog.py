"""The app's names for discovery (explorer.discovery) and one packet's summary (explorer.analysis.summary); no UI code of its own."""

from explorer.analysis.summary import PacketSummary as Summary
from explorer.analysis.summary import summary_of as summarize
from explorer.discovery import ROOT_ENV, Entry, choose_root, default_root, discover, lookup

__all__ = ["ROOT_ENV", "Entry", "Summary", "choose_root", "default_root", "discover", "lookup", "summarize"]
