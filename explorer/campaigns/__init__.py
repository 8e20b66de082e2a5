"""Campaigns: one request captured on two backends at many layers and steps, as one grid.

Campaigns: one request captured on two backends at many layers and steps, as one grid with its origin; no UI."""
