"""pyasc.ir.passes."""
