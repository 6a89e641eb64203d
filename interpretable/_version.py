"""The package's version, one string the package metadata and the code both read."""

__version__ = "0.1.0"
