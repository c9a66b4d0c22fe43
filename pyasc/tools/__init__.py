"""Tools above the compiler: ``pyasc doctor``, the report of what this machine can run
(:mod:`pyasc.tools.doctor`); ``ascend-dump-graph``, the data-flow graph of an IR file
(:mod:`pyasc.tools.dump_graph`)."""
