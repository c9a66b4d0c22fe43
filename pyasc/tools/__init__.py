"""Tools above the compiler: ``pyasc doctor``, the report of what this machine can run
(:mod:`pyasc.tools.doctor`)."""
