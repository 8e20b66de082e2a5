"""Two captures of one selection (compare-v1): the Pair model, its computation, its emulation x side matrix and its JSON report; never imports UI code."""
