"""``examples/training/train_mlp.py``: an MLP trained with pyasc's automatic gradients,
its loss curve equal to plain torch's on the same initialization and batches."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "training" / "train_mlp.py"


def _example():
    spec = importlib.util.spec_from_file_location("train_mlp", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_loss_decreases(capsys):
    assert _example().main(["--steps", "40", "--no-torch"]) == 0
    assert "loss decreased" in capsys.readouterr().out


def test_the_loss_curve_is_torch_s():
    pytest.importorskip("torch")
    t = _example()
    x, labels = t.make_data(512, 16, 4)
    params = t.init_params(16, 32, 4)
    order = t.batches(len(x), 32, 25)
    ours = t.train_pyasc(x, labels, params, order, 0.2)
    theirs = t.train_torch(x, labels, params, order, 0.2)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4)
