"""A user's names never clash with the names generated kernels declare themselves.

Kernels name buffers and parameters after the user's arrays (``xGm``, ``out``) beside
names their emitters write literally (``acc``, ``r0``, ``pitch``, a ``CopyIn(c)``
parameter).  A user array named like one of those made C++ that did not compile, or that
could silently read the wrong variable (an inner declaration shadowing a parameter).
Each case below is compiled once; every short lower-case identifier of its generated
AscendC is a candidate name, and the function is rewritten (``ast``) with its own names
(parameters, locals) renamed to candidates.  The renamed function must give the original's
ascend-sim result bit for bit: names never change the computation.  CI renames once per
case; every candidate is tried by the ``slow`` sweep::

    pytest -m slow -n 2 tests/backend/ascendc/test_kernel_names.py
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import keyword
import random
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import lower_program

RNG = np.random.default_rng(77)


def _f32(*shape):
    return RNG.integers(-4, 5, shape).astype(np.float32)


def _pos(*shape):
    return RNG.integers(1, 5, shape).astype(np.float32)


# name: (source, args, hybrid options)
CASES = {
    "elementwise": ("""
def f(x, y):
    return np.exp(x * 0.125) * y + 1
""", lambda: (_f32(37, 29), _f32(37, 29)), {}),
    "rows": ("""
def f(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""", lambda: (_f32(9, 130),), {"dynamic_shape": True}),
    "layernorm": ("""
def f(x, g, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b
""", lambda: (_f32(6, 70), _f32(70), _f32(70)), {}),
    "long_rows": ("""
def f(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""", lambda: (_f32(2, 50257),), {"dynamic_shape": True}),
    "cols": ("""
def f(a, b):
    return (a * b).sum(axis=0) + a.max(axis=0)
""", lambda: (_f32(300, 17), _f32(300, 17)), {}),
    "planes": ("""
def f(x):
    return x - x.mean(axis=1, keepdims=True)
""", lambda: (_f32(4, 64, 24),), {}),
    "split_var": ("""
def f(x):
    return x.var(axis=0)
""", lambda: (_f32(4097, 7),), {}),
    "stencil": ("""
def f(img):
    h, w = img.shape
    out = np.zeros_like(img)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            acc = np.float32(0)
            for a in range(-1, 2):
                for b in range(-1, 2):
                    acc += img[i + a, j + b]
            out[i, j] = acc / 9
    return out
""", lambda: (_f32(41, 67),), {}),
    "depthwise": ("""
def f(x, wt):
    c, h, w = x.shape
    out = np.zeros((c, h - 2, w - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(w - 2):
                out[ch, i, j] = np.sum(x[ch, i:i + 3, j:j + 3] * wt[ch])
    return out
""", lambda: (_f32(3, 29, 45), _f32(3, 3, 3)), {"dynamic_shape": True}),
    "channels": ("""
def f(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = np.float32(0)
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc
    return out
""", lambda: (_f32(3, 21, 37), _f32(4, 3, 3, 3)), {"dynamic_shape": True}),
    "max_pool": ("""
def f(x):
    h, w = x.shape
    out = np.zeros((h // 2, w // 2), dtype=x.dtype)
    for i in range(h // 2):
        for j in range(w // 2):
            out[i, j] = x[2 * i:2 * i + 2, 2 * j:2 * j + 2].max()
    return out
""", lambda: (_f32(40, 66),), {}),
    "adaptive_pool": ("""
def f(x, size):
    h, w = x.shape
    oh, ow = size
    out = np.zeros((oh, ow), dtype=x.dtype)
    for i in range(oh):
        h0 = (i * h) // oh
        h1 = ((i + 1) * h + oh - 1) // oh
        for j in range(ow):
            w0 = (j * w) // ow
            w1 = ((j + 1) * w + ow - 1) // ow
            out[i, j] = np.mean(x[h0:h1, w0:w1])
    return out
""", lambda: (_f32(37, 53), (5, 7)), {"dynamic_shape": True}),
    "matmul": ("""
def f(a, b):
    return a @ b
""", lambda: (_f32(64, 48).astype(np.float16), _f32(48, 80).astype(np.float16)), {}),
    "matmul_mix": ("""
def f(a, b, bias):
    return np.maximum(a @ b + bias, 0)
""", lambda: (_f32(64, 48).astype(np.float16), _f32(48, 80).astype(np.float16),
              _f32(80).astype(np.float16)), {}),
    "cumulative": ("""
def f(x):
    return np.cumsum(x, axis=1)
""", lambda: (_f32(5, 33),), {}),
    "scalar": ("""
def f(x, t):
    out = np.zeros_like(x)
    n = 0
    for i in range(x.shape[0]):
        if x[i] > t:
            out[n] = x[i]
            n += 1
        if n > 20:
            break
    return out
""", lambda: (_f32(97), np.float32(0.5)), {}),
}

_SHORT = re.compile(r"\b[a-z][A-Za-z0-9_]{0,11}\b")
_COMMENT = re.compile(r"//[^\n]*|^#[^\n]*", re.MULTILINE)  # (and #line, #include)
_COMPILED: dict[str, tuple[list[str], object]] = {}


def _module(tmp: Path, name: str, source: str):
    path = tmp / f"{name}.py"
    path.write_text("import numpy as np\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


def _own_names(tree: ast.AST) -> list[str]:
    """The function's parameters and the names it assigns, in order of appearance."""
    seen: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            seen[node.arg] = None
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            seen[node.id] = None
    return list(seen)


def _renamed(source: str, names: dict[str, str]) -> str:
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg in names:
            node.arg = names[node.arg]
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return ast.unparse(tree) + "\n"


def _original(name: str, tmp: Path):
    """(candidate names, the original's ascend-sim result) of case ``name``."""
    if name not in _COMPILED:
        source, make, opts = CASES[name]
        fn = _module(tmp, f"orig_{name}", source)
        args = make()
        code = lower_program(hybrid(fn, target="ascend-sim", **opts).specialize(*args)).source
        taken = set(_SHORT.findall(source)) | set(dir(builtins)) | {"np", "f"}
        cands = sorted({n for n in _SHORT.findall(_COMMENT.sub("", code))
                        if n not in taken and not keyword.iskeyword(n)})
        got = hybrid(fn, target="ascend-sim", **opts)(*args)
        _COMPILED[name] = (cands, (args, got))
    return _COMPILED[name]


def _rounds(name: str, cands: list[str]) -> list[dict[str, str]]:
    """Renamings of the case's own names covering every candidate once."""
    own = _own_names(ast.parse(CASES[name][0]))
    order = cands[:]
    random.Random(name).shuffle(order)
    return [dict(zip(own, order[k:k + len(own)], strict=False))
            for k in range(0, len(order), len(own))]


def _check(name: str, names: dict[str, str], tmp: Path, orig) -> None:
    args, want = orig
    source, _, opts = CASES[name]
    fn = _module(tmp, f"renamed_{name}_{abs(hash(tuple(names.values())))}",
                 _renamed(source, names))
    got = hybrid(fn, target="ascend-sim", **opts)(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        np.testing.assert_array_equal(g, w, err_msg=f"{name} renamed {names}")


@pytest.mark.parametrize("name", list(CASES))
def test_names_like_the_kernels_own_give_the_same_result(name, tmp_path):
    cands, orig = _original(name, tmp_path)
    _check(name, _rounds(name, cands)[0], tmp_path, orig)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_every_kernel_identifier_as_a_user_name(name, tmp_path):
    cands, orig = _original(name, tmp_path)
    failed = []
    for names in _rounds(name, cands):
        try:
            _check(name, names, tmp_path, orig)
        except Exception as e:  # noqa: BLE001 -- collect every clash, then report
            failed.append(f"{names}: {type(e).__name__}: {str(e)[:300]}")
    assert not failed, "\n".join(failed)
