"""``@hybrid``: wrapping, options, targets, the interpret target, inspection methods,
gradients and the Program handed to backends."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import pyasc
from pyasc import errors, hybrid
from pyasc.backend.base import Program
from pyasc.jit import HybridFunction
from pyasc.jit.options import TARGETS, resolve_target


@hybrid
def documented(x, scale=2.0, *, bias=0):
    """Scale and shift."""
    return x * scale + bias


def test_wrapper_keeps_name_doc_wrapped_and_signature():
    assert isinstance(documented, HybridFunction)
    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Scale and shift."
    assert inspect.signature(documented) == inspect.signature(documented.__wrapped__)
    assert str(inspect.signature(documented)) == "(x, scale=2.0, *, bias=0)"
    assert "documented" in repr(documented)


def test_decorator_with_and_without_options():
    @hybrid(target="interpret", fastmath=True, boundscheck=True, cache=False,
            dynamic_shape=True, device_type=["Ascend310", "Ascend910"])
    def f(x):
        return x + 1

    assert f.options.fastmath and f.options.boundscheck and not f.options.cache
    assert f.options.device_type == ("Ascend310", "Ascend910")
    assert f(np.ones(2)).tolist() == [2.0, 2.0]
    assert hybrid(f.__wrapped__).options.target is None


def test_every_soc_of_the_table_is_a_device_type():
    # device_type used to check a list of its own that lacked most of the SoC table
    # (Ascend910_9391, Ascend310B4, Ascend910ProB, ...): what the backend knows is valid
    from pyasc.backend.ascendc.soc import ALIASES, SOCS

    names = sorted(set(SOCS) | set(ALIASES))
    assert len(names) > 14
    @hybrid(device_type=names)
    def f(x):
        return x + 1

    assert f.options.device_type == tuple(names)


@pytest.mark.parametrize("options,needle", [
    ({"target": "gpu"}, "unknown target"),
    ({"device_type": ["Ascend999"]}, "unknown SoC"),
    ({"device_type": []}, "device_type"),
    ({"fastmath": "yes"}, "True or False"),
    ({"opt_level": 3}, "unknown option"),
])
def test_invalid_options(options, needle):
    with pytest.raises(errors.InvalidOptionError) as info:
        hybrid(**options)
    assert needle in info.value.message and info.value.code == "E50041"


def _partial():
    return functools.partial(documented.__wrapped__, scale=3.0)


async def _coroutine(x):
    return x


async def _async_gen(x):
    yield x


class _Holder:
    pass


NOT_FUNCTIONS = [  # (what @hybrid receives, words the message must contain)
    (lambda: (lambda v: v + 1), "a lambda"),
    (lambda: _coroutine, "async function"),
    (lambda: _async_gen, "async generator"),
    (lambda: staticmethod(documented.__wrapped__), "staticmethod"),
    (lambda: classmethod(documented.__wrapped__), "classmethod"),
    (_partial, "functools.partial"),
    (lambda: len, "builtin function"),
    (lambda: np.add, "ufunc object"),
    (lambda: _Holder, "a class"),
    (lambda: _Holder().__init__, "method"),
    (lambda: 3, "int object"),
]


@pytest.mark.parametrize("make,words", NOT_FUNCTIONS, ids=[w for _, w in NOT_FUNCTIONS])
def test_decorating_anything_but_a_def_function_names_the_construct(make, words):
    obj = make()
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        hybrid(obj)  # DECORATE_LINE
    err = info.value
    assert err.code == "E50010" and words in err.message and err.hint
    assert err.filename == __file__ and err.lineno == _line_of("# DECORATE_LINE")
    with pytest.raises(errors.UnsupportedSyntaxError):
        hybrid(target="cpu")(obj)  # the decorator-with-options form too


def _line_of(marker: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(i for i, line in enumerate(lines, 1) if marker in line and "_line_of" not in line)


def test_a_method_is_refused_at_its_decorator():
    class Scaler:
        @hybrid  # METHOD_DECORATOR
        def scale(self, x):
            return x * 2

    for call in (lambda: Scaler().scale(np.ones(3)), lambda: Scaler.scale(np.ones(3)),
                 lambda: Scaler().scale.ir(np.ones(3))):
        with pytest.raises(errors.UnsupportedSyntaxError) as info:
            call()
        err = info.value
        assert "missing a required argument" not in err.message
        assert "'test_a_method_is_refused_at_its_decorator." \
               "<locals>.Scaler.scale'" in err.message and "method" in err.message
        assert (err.filename, err.lineno, err.col_offset) == \
            (__file__, _line_of("# METHOD_DECORATOR"), 9)
        assert "@staticmethod" in err.hint


def test_a_method_whose_arguments_happen_to_bind_is_refused_too():
    class Scaler:
        @hybrid
        def scale(self, x, factor=2.0):
            return x * factor

    with pytest.raises(errors.UnsupportedSyntaxError):  # self=x, x=3.0 would run
        Scaler().scale(np.ones(3), 3.0)


def test_a_classmethod_over_hybrid_is_refused_naming_it():
    class Scaler:
        @classmethod
        @hybrid  # CLASSMETHOD_DECORATOR
        def scale(cls, x):
            return x * 2

    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        Scaler.scale(np.ones(3))
    assert "classmethod" in info.value.message
    assert info.value.lineno == _line_of("# CLASSMETHOD_DECORATOR")


def test_staticmethod_over_hybrid_still_works():
    class Scaler:
        @staticmethod
        @hybrid
        def scale(x):
            return x * 2

    assert Scaler.scale(np.ones(3)).tolist() == [2.0] * 3
    assert Scaler().scale(np.ones(2)).tolist() == [2.0] * 2


def test_interpret_target_runs_the_python_function():
    calls = []

    @hybrid(target="interpret")
    def f(x):
        calls.append(1)
        return np.maximum(x, 0)

    assert f(np.array([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert calls == [1]


def test_interpret_target_raises_the_python_errors():
    @hybrid(target="interpret")
    def f(x):
        assert x.shape[0] == 2, "need two"
        return x

    with pytest.raises(AssertionError, match="need two"):
        f(np.zeros(3))


def test_target_resolution(monkeypatch):
    monkeypatch.delenv("PYASC_TARGET", raising=False)
    assert resolve_target(hybrid(lambda_free).options) in ("cpu", "ascend")
    monkeypatch.setenv("PYASC_TARGET", "interpret")
    assert resolve_target(hybrid(lambda_free).options) == "interpret"
    assert resolve_target(hybrid(target="cpu")(lambda_free).options) == "cpu"
    monkeypatch.setenv("PYASC_TARGET", "bogus")
    with pytest.raises(errors.InvalidOptionError):
        resolve_target(hybrid(lambda_free).options)
    assert set(TARGETS) == {"auto", "cpu", "interpret", "ascend", "ascend-sim"}


def lambda_free(x):
    return x


def test_environment_variable_selects_interpret(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "interpret")

    @hybrid
    def f(x):
        return x * 3

    assert f(np.ones(2)).tolist() == [3.0, 3.0]


def test_ir_before_and_after_passes_and_dump(tmp_path):
    x = np.ones((2, 3), np.float32)
    before = documented.ir(x, optimized=False)
    after = documented.ir(x)
    assert '"func.func"' in before and 'sym_name = "documented"' in after
    assert "memref<2x3xf32>" in before
    path = documented.dump_ir(tmp_path / "k.ir", x)
    assert path.read_text() == after + "\n"


def test_specialize_returns_a_program():
    x = np.ones(4, np.float32)
    program = documented.specialize(x, bias=1)
    assert isinstance(program, Program)
    assert program.entry == "documented" and len(program.cache_key) == 64
    assert program.module.get("documented").function_type.inputs[0].shape == (4,)
    assert program.options["fastmath"] is False and program.source_file == __file__
    assert program.result_params == (None,)


def test_cache_key_covers_callees_options_and_version(monkeypatch):
    x = np.ones(3)

    @hybrid
    def callee(v):
        return v + 1

    @hybrid
    def f(v):
        return callee(v)

    key = f.specialize(x).cache_key
    assert hybrid(fastmath=True)(f.__wrapped__).specialize(x).cache_key != key
    monkeypatch.setattr(pyasc.version, "__version__", "9.9.9")
    assert hybrid(f.__wrapped__).specialize(x).cache_key != key


def test_returned_parameter_is_the_callers_object():
    @hybrid
    def inc(x):
        x += 1
        return x

    program = inc.specialize(np.zeros(3))
    assert program.result_params == (0,)
    a = np.zeros(3)
    out = inc.run_with(_interpret, a)
    assert out is a and a.tolist() == [1.0, 1.0, 1.0]


def _interpret(program):
    from pyasc.ir.interpreter import Interpreter

    return lambda flat: Interpreter(program.module).call(program.entry, *flat)


def test_calling_compiles_once_per_specialization(monkeypatch):
    compiled = []

    class FakeBackend:
        name = "fake"

        def compile(self, program):
            compiled.append(program.cache_key)
            return _interpret(program)

    monkeypatch.setattr("pyasc.jit.decorator.get_backend", lambda target: FakeBackend())

    @hybrid(target="cpu")
    def f(x, k):
        return x * k

    for _ in range(3):
        assert f(np.ones(2), 3).tolist() == [3.0, 3.0]
    f(np.ones(2), 4)
    assert len(compiled) == 1
    f(np.ones(3), 4)
    f(np.ones(2, np.float32), 4)
    assert len(compiled) == 3


def test_def_grad_registers_a_compiled_gradient(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "interpret")

    @hybrid  # the seed's custom_loss: a parameter named like the option 'target'
    def loss(pred, target):
        diff = pred - target
        return np.sum(diff ** 2)

    @loss.def_grad
    def loss_grad(pred, target, dout):
        return 2 * (pred - target) * dout, -2 * (pred - target) * dout

    p, t = np.array([1.0, 2.0]), np.array([0.5, 2.5])
    assert isinstance(loss_grad, HybridFunction)
    gp, gt = loss.vjp(p, t, 1.0)
    assert gp.tolist() == [1.0, -1.0] and gt.tolist() == [-1.0, 1.0]
    assert "func.func" in loss_grad.ir(p, t, 1.0)


def test_vjp_without_definition_is_automatic():
    # (was E50010 before automatic differentiation: tests/autodiff covers it)
    gx, gscale, gbias = documented.vjp(np.ones(2), 3.0, np.array([1.0, 2.0]), bias=1)
    assert gx.tolist() == [3.0, 6.0] and gscale is None and gbias is None


def test_public_exports():
    assert pyasc.hybrid is hybrid and callable(pyasc.supported_numpy)
    assert pyasc.__version__
    with pyasc.fusion_scope():
        pass
    composed = pyasc.fusion_group(lambda_free)
    assert isinstance(composed, HybridFunction) and composed.__wrapped__ is lambda_free
    assert pyasc.fusion_group(composed) is composed
