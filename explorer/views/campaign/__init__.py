"""The campaign's view: a campaign's cells as a steps x layers grid; draws only."""
