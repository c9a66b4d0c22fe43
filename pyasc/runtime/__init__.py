"""pyasc.runtime."""
