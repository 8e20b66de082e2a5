"""The explorer's own version string; imports nothing, so every layer may name it."""

__version__ = "0.1.0"
