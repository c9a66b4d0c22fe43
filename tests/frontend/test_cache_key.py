"""Program keys: computed before any IR exists, they cover the source, the values the
function captures (closures, globals, callees), the signature, options and versions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyasc
from pyasc import hybrid
from pyasc.frontend.source import load_source, register_source
from pyasc.jit.fingerprint import function_digest, parse_source, program_key, source_text

X = np.ones(4, np.float32)
_COUNTER = itertools.count()


def key_of(f, *args, **kwargs) -> str:
    """The program key of ``f``'s specialization for this call (no IR built)."""
    specs, key = f._key_of(f._arguments(args, kwargs))
    return program_key(f, key, f.options.as_dict())


def define(source: str, **globs) -> dict:
    """Execute ``source`` as a module with findable source (as a notebook cell is)."""
    filename = f"<pyasc-cache-key-{next(_COUNTER)}>"
    register_source(filename, source)
    namespace = {"np": np, "hybrid": hybrid, **globs}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def make_closure(k):
    @hybrid
    def add_k(x):
        return x + k
    return add_k


def test_closures_over_different_values_get_different_keys():
    assert key_of(make_closure(1), X) != key_of(make_closure(2), X)
    assert key_of(make_closure(1.0), X) != key_of(make_closure(1), X)
    assert key_of(make_closure(np.float32(1)), X) != key_of(make_closure(1.0), X)


def test_closures_over_equal_values_share_a_key():
    assert key_of(make_closure(3), X) == key_of(make_closure(3), X)
    assert key_of(make_closure((1, 2.5)), X) == key_of(make_closure((1, 2.5)), X)


SOURCE = """
@hybrid
def scale(x):
    return x * FACTOR
"""


def test_a_changed_module_constant_changes_the_key():
    first = define(SOURCE, FACTOR=2)["scale"]
    second = define(SOURCE, FACTOR=3)["scale"]
    third = define(SOURCE, FACTOR=2)["scale"]
    assert key_of(first, X) != key_of(second, X)
    # same text and value, but another "file": locations differ, so do keys
    assert key_of(first, X) != key_of(third, X)
    ns = define(SOURCE, FACTOR=2)
    before = key_of(ns["scale"], X)
    ns["FACTOR"] = 5  # a global changed after definition: the next key sees it
    assert key_of(ns["scale"], X) != before
    ns["FACTOR"] = 2
    assert key_of(ns["scale"], X) == before


ARRAY_SOURCE = """
@hybrid
def weigh(x):
    return x * W
"""


def test_captured_arrays_are_keyed_by_content_and_dtype():
    ns = define(ARRAY_SOURCE, W=np.arange(4, dtype=np.float32))
    before = key_of(ns["weigh"], X)
    ns["W"] = np.arange(4, dtype=np.float32)  # a new object, same content
    assert key_of(ns["weigh"], X) == before
    ns["W"] = np.arange(4, dtype=np.float64)
    assert key_of(ns["weigh"], X) != before
    ns["W"] = np.arange(4, dtype=np.float32)[::-1]
    assert key_of(ns["weigh"], X) != before


def test_dtypes_and_imported_numpy_functions_are_told_apart():
    src = "@hybrid\ndef conv(x):\n    return RED(x.astype(DT))\n"
    keys = {key_of(define(src, RED=red, DT=dt)["conv"], X)
            for red in (np.sum, np.max) for dt in (np.float32, np.dtype("float64"))}
    assert len(keys) == 4


CALLER = """
@hybrid
def callee(v, k=K):
    return v * k + OFFSET

@hybrid
def caller(x):
    return callee(x)
"""


def test_callees_source_defaults_and_captured_values_are_covered():
    base = key_of(define(CALLER, K=2, OFFSET=1)["caller"], X)
    assert key_of(define(CALLER, K=3, OFFSET=1)["caller"], X) != base
    assert key_of(define(CALLER, K=2, OFFSET=4)["caller"], X) != base
    edited = CALLER.replace("v * k", "v - k")
    assert key_of(define(edited, K=2, OFFSET=1)["caller"], X) != base


def test_signature_options_and_versions_are_covered(monkeypatch):
    f = make_closure(1)
    key = key_of(f, X)
    assert key_of(f, X.astype(np.float64)) != key
    assert key_of(f, np.ones(5, np.float32)) != key
    assert key_of(hybrid(fastmath=True)(f.__wrapped__), X) != key
    assert key_of(hybrid(boundscheck=False)(f.__wrapped__), X) != key
    assert key_of(hybrid(boundscheck=True)(f.__wrapped__), X) == key  # the default
    assert key_of(hybrid(cache=False)(f.__wrapped__), X) == key  # cache is not codegen
    monkeypatch.setattr(pyasc.version, "__version__", "9.9.9")
    assert key_of(f, X) != key


def test_program_cache_key_is_the_key_computed_before_the_ir():
    f = make_closure(7)
    assert f.specialize(X).cache_key == key_of(f, X)


def test_recursion_and_unusable_values_do_not_break_the_digest():
    ns = define("@hybrid\ndef loop(x):\n    return loop(x) + OBJ\n", OBJ=object())
    assert len(function_digest(ns["loop"])) == 64  # a cycle contributes its name
    # the undecorated function itself is a global of its body (a name numpy also has)
    ns = define("def mean(x):\n    return np.mean(x)\n", np=np)
    assert len(function_digest(hybrid(ns["mean"]))) == 64
    assert key_of(hybrid(ns["mean"]), X) == key_of(hybrid(ns["mean"]), X)


def test_source_text_reads_the_definition_without_tokenizing():
    f = make_closure(1)
    text = source_text(f.__wrapped__)
    assert text.lstrip().startswith("@hybrid") and text.rstrip().endswith("return x + k")
    info, reference = parse_source(f.__wrapped__), load_source(f.__wrapped__)
    assert (info.text, info.first_line, info.wrapped) == \
        (reference.text, reference.first_line, reference.wrapped)


def test_text_the_key_does_not_cover_is_never_cached(monkeypatch):
    f = make_closure(1)
    monkeypatch.setattr(f, "key_source", lambda: "something else")
    assert f.specialize(X).options["cache"] is False


@pytest.mark.parametrize("cell_value", [1, 2])
def test_closure_kernels_compute_their_own_values(cell_value, tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path))
    for k in (1, 2):  # both compiled into one disk cache: never each other's kernel
        f = hybrid(target="cpu")(make_closure(k * cell_value).__wrapped__)
        assert f(X).tolist() == (X + k * cell_value).tolist()
