"""Handlers of the numpy registry, one module per family; ``pyasc.frontend.rules``
imports them (importing fills the table)."""
