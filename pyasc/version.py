"""pyasc's version (its own module so that every layer can read it without importing
the package face, which imports the layers above)."""

__version__ = "0.1.0"
