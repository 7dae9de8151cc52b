"""The package's version: the one place it is written (the wheel builder reads it)."""

__version__ = "0.1.0"
