"""Operator replay runs beside their packet (replay-v1): the Replay model, reading the run, its computation and its JSON report; never imports UI code."""
