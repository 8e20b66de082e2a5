"""The replay run's view: a GPU replay run beside its packet, and its tables."""
