"""Branch-free float32 implementations of transcendental functions, built as IR.

One module per function family (``exp``, ``log``, ``sigmoidal``, ``trig``, ``power``),
each exporting functions ``f(x: Val) -> Val`` that build range reduction + polynomial
code from elementwise ``arith`` ops and a few ``math`` ops that are single instructions
(``round floor abs sqrt``); ``emit`` has the operator-overloading builder they use.
``accuracy`` measures them against numpy over the float32 range.  The pass that uses
them is ``pyasc.ir.passes.expand_math``.
"""
