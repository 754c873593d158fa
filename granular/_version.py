"""The version of granular (its own module: the run layer reads it without importing the package)."""

__version__ = "0.1.0"
