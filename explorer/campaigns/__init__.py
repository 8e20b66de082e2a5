"""Campaigns: one request captured on two backends at many layers and steps, as one grid; no UI."""
