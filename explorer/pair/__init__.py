"""Two captures of one selection (docs/pairs.md).

The Pair model, its computation, its emulation x side matrix and its JSON report; never imports UI code.
"""
