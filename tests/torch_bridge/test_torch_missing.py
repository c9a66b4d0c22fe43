"""Without torch: pyasc works as before, and what needs torch says how to get it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_without_torch_calls_work_and_as_torch_op_is_e50030(tmp_path):
    script = tmp_path / "no_torch.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        import numpy as np
        import pyasc
        from pyasc.errors import ToolchainMissingError

        @pyasc.hybrid(target="cpu")
        def f(x):
            return x + 1

        assert (f(np.zeros(3)) == 1).all()
        try:
            f.as_torch_op()
        except ToolchainMissingError as exc:
            assert exc.code == "E50030" and "pyasc-hybrid[torch]" in exc.hint, exc
            print("ok")
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "ok", out.stderr
