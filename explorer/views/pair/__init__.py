"""The pair's view: two captures of one selection side by side, its tables and emulation section."""
