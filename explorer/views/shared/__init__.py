"""Drawing pieces every kind's views share: HTML helpers, per-head charts, scales, panes."""
