"""pyasc.backend."""
