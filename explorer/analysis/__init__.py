"""Analysis of admitted packets: tensor facts, numerics and the report; never imports UI code."""
