"""Inline display of results in Jupyter (`_repr_html_`, `.views`): the packet's and the pair's.

Loads the UI libraries only when a view is asked for.
"""
