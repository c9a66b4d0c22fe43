"""pyasc.backend.ascendc."""
