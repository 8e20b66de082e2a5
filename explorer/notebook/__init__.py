"""Inline display of results in Jupyter (`_repr_html_`, `.views`); the UI loads only for a view."""
