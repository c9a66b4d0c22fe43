"""The training part of ``pyasc demo``: ``examples/training/train_mlp.py`` beside torch.

The example trains a small GELU MLP with ``pyasc.value_and_grad`` (automatic
gradients, no gradient written by hand), and the same model, initialization and batches
in plain torch.  :func:`run` loads it from the examples folder, trains both, prints the
two loss curves side by side, the time of each (pyasc's first step, which compiles the
forward and the backward, apart) and whether the loss decreased as in torch.  Without
torch there is nothing to compare with: it says so and skips the run.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

NAME = "train_mlp"
"""The name ``pyasc demo --only`` selects the training by."""

STEPS = {"small": 60, "default": 300}


def _load(examples: Path) -> ModuleType | None:
    path = examples / "training" / f"{NAME}.py"
    spec = importlib.util.spec_from_file_location(f"pyasc_example_{NAME}", path)
    if not path.is_file() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_available() -> bool:
    """Whether torch can be imported (found, not imported: only ``pyasc.torch`` and the
    example itself import it)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:  # a module in sys.modules without a spec
        return True


def run(examples: Path, size: str) -> bool:
    """Train the example MLP with pyasc and with torch and print the curves; ``False``
    if the loss did not decrease as in torch (skipped runs are ``True``)."""
    print(f"\ntraining: examples/training/{NAME}.py (pyasc.value_and_grad vs torch)")
    if not _torch_available():
        print("training: skipped (torch is not installed; the loss curve is compared with "
              "torch's: pip install 'pyasc-hybrid[torch]')")
        return True
    example = _load(examples)
    if example is None:
        print(f"training: skipped (no training/{NAME}.py under {examples})")
        return True
    result = _train(example, STEPS[size])
    if result["ref"] is None:  # found but not importable
        print("training: skipped (torch cannot be imported)")
        return True
    _print(result)
    return result["ok"]


def _train(t: ModuleType, steps: int, batch: int = 64, lr: float = 0.2) -> dict[str, Any]:
    x, labels = t.make_data(2048, 16, 4)
    params = t.init_params(16, 32, 4)
    order = t.batches(len(x), batch, steps)
    start = time.perf_counter()
    first = t.train_pyasc(x, labels, params, order[:1], lr)  # compiles
    compiled = time.perf_counter()
    ours = t.train_pyasc(x, labels, params, order, lr)
    done = time.perf_counter()
    ref = t.train_torch(x, labels, params, order, lr)
    ref_time = time.perf_counter() - done
    begin, end = float(np.mean(ours[:10])), float(np.mean(ours[-10:]))
    ok = ref is not None and end < 0.5 * begin and \
        abs(end - float(np.mean(ref[-10:]))) < 0.05 * max(begin, 1.0)
    return {"ours": ours, "ref": ref, "ok": ok and first[0] == ours[0], "steps": steps,
            "compile": compiled - start, "pyasc": done - compiled, "torch": ref_time}


def _print(r: dict[str, Any]) -> None:
    steps = r["steps"]
    print(f"{'step':>6} {'pyasc loss':>11} {'torch loss':>11}")
    for s in sorted({0, *range(steps // 6, steps, steps // 6 or 1), steps - 1}):
        print(f"{s:>6} {r['ours'][s]:11.4f} {r['ref'][s]:11.4f}")
    print(f"pyasc: {steps} steps in {r['pyasc']:.2f} s, after a first step of "
          f"{r['compile']:.2f} s (compiling the forward and backward, or loading them from "
          f"the kernel cache); torch: {r['torch']:.2f} s")
    print("training: loss decreased as in torch" if r["ok"]
          else "training: WRONG, the loss did not decrease as in torch")
