"""The app's shell around the views: packet catalog, packet list, URL query and export wiring.

Computes no numbers.
"""
