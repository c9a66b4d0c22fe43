"""pyasc.frontend."""
