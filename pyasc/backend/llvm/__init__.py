"""pyasc.backend.llvm."""
