"""Handlers of the numpy registry, one module per family; importing fills the table."""

from pyasc.frontend.npfuncs import creation, linalg, reductions, shapes, sorting, ufuncs

__all__ = ["creation", "linalg", "reductions", "shapes", "sorting", "ufuncs"]
