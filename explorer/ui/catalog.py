"""The app's names for packet discovery and one packet's summary; no UI code of its own."""

from explorer.catalog.discovery import ROOT_ENV, Entry, choose_root, default_root, discover, lookup
from explorer.catalog.summary import PacketSummary as Summary
from explorer.catalog.summary import summary_of as summarize

__all__ = ["ROOT_ENV", "Entry", "Summary", "choose_root", "default_root", "discover", "lookup", "summarize"]
