"""The single packet's views: one module per tab, registered in `registry.py` in tab order."""
