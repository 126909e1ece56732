"""The lazyk release (pyproject.toml holds the same string; a test checks they agree)."""

__version__ = "0.1.0"
