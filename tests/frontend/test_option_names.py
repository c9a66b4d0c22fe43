"""Options and parameters live in different namespaces (issue 15).

A function may have a parameter named like any decorator option (``target``,
``device_type``...) or any inspection option (``target``, ``soc``, ``optimized``),
or like the inspection methods' own positional parameters (``path``, ``self``): it is
decorated with that option, called with that keyword, and inspected with it, and the
keyword always means the function's argument.  Inspection options then go through
``fn.bind(...)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import errors, hybrid
from pyasc.jit.inspection import BoundCall
from pyasc.jit.options import OPTION_NAMES

X = np.linspace(-2, 2, 12).reshape(3, 4).astype(np.float32)  # ascendc: no float64


def with_target(x, target):
    return x * target


def with_dynamic_shape(x, dynamic_shape):
    return x * dynamic_shape


def with_device_type(x, device_type):
    return x * device_type


def with_fastmath(x, fastmath):
    return x * fastmath


def with_boundscheck(x, boundscheck):
    return x * boundscheck


def with_cache(x, cache):
    return x * cache


def with_device_float64(x, device_float64):
    return x * device_float64


def with_matmul_fma(x, matmul_fma):
    return x * matmul_fma


def with_sum_lanes(x, sum_lanes):
    return x * sum_lanes


PARAMETER_NAMED_LIKE = {"target": with_target, "dynamic_shape": with_dynamic_shape,
                        "device_type": with_device_type, "fastmath": with_fastmath,
                        "boundscheck": with_boundscheck, "cache": with_cache,
                        "device_float64": with_device_float64,
                        "matmul_fma": with_matmul_fma, "sum_lanes": with_sum_lanes}
OPTION_VALUES = {"target": "cpu", "dynamic_shape": True, "device_type": "Ascend910B1",
                 "fastmath": True, "boundscheck": True, "cache": False,
                 "device_float64": "demote", "matmul_fma": False, "sum_lanes": False}


def test_every_option_has_a_case():
    assert set(PARAMETER_NAMED_LIKE) == set(OPTION_NAMES) == set(OPTION_VALUES)


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_option_and_parameter_of_the_same_name(name):
    fn = hybrid(**{name: OPTION_VALUES[name]})(PARAMETER_NAMED_LIKE[name])
    assert getattr(fn.options, name) is not None
    np.testing.assert_allclose(fn(X, **{name: 1.5}), X * 1.5)
    np.testing.assert_allclose(fn(X, 2.5), X * 2.5)
    assert fn.ir(X, **{name: 1.5}) == fn.ir(X, 1.5)


@hybrid(target="cpu")
def custom_loss(pred, target):  # the seed's example, pinned to the CPU
    diff = pred - target
    return np.sum(diff ** 2)


def test_the_seeds_custom_loss_with_a_target_option():
    t = X[::-1].copy()
    assert custom_loss(X, target=t) == pytest.approx(np.sum((X - t) ** 2))
    assert custom_loss(X, t) == pytest.approx(np.sum((X - t) ** 2))


@hybrid(target="cpu")
def mix(x, target, soc=1.0, optimized=2.0):
    return x * target + soc - optimized


def test_shortcut_keywords_that_are_parameters_go_to_the_function():
    np.testing.assert_allclose(mix(X, target=3.0, soc=0.5, optimized=0.25),
                               X * 3.0 + 0.5 - 0.25)
    # the same specialization as the positional call, compiled for the default target
    assert mix.kernel(X, target=3.0) is mix.kernel(X, 3.0)
    # 'optimized' is the function's float32 argument here, not the IR option
    ir = mix.ir(X, 3.0, optimized=np.float32(1))
    assert ir == mix.ir(X, 3.0, 1.0, np.float32(1)) == mix.bind(X, 3.0, 1.0, np.float32(1)).ir()
    assert "%optimized: f32" in ir
    # 'soc' is the function's argument: not a SoC name to validate
    assert mix.ascendc(X, 3.0, soc=0.5) == mix.bind(X, 3.0, 0.5).ascendc()
    assert mix.asm(X, target=3.0) == mix.bind(X, 3.0).asm()
    assert mix.llvm_ir(X, target=3.0) == mix.bind(X, 3.0).llvm_ir()


def test_bind_separates_the_arguments_from_the_options():
    call = mix.bind(X, target=3.0, optimized=0.5)
    assert isinstance(call, BoundCall)
    assert call.ir() == mix.ir(X, 3.0)
    assert call.ir(optimized=False) != call.ir() and '"func.func"' in call.ir(optimized=False)
    assert call.kernel(target="cpu") is mix.kernel(X, 3.0)
    assert call.program is mix.specialize(X, target=3.0)
    assert call.ascendc(soc="Ascend910B1") == call.ascendc()
    with pytest.raises(errors.InvalidOptionError):
        call.ascendc(soc="Ascend999")
    with pytest.raises(errors.ArgumentError):
        mix.bind(X, 1.0, nope=2.0)  # checked when binding, like a call


def test_options_still_work_where_nothing_clashes():
    @hybrid
    def plain(x):
        return x * 2

    assert plain.ir(X, optimized=False) == plain.bind(X).ir(optimized=False)
    assert plain.kernel(X, target="cpu") is plain.bind(X).kernel(target="cpu")
    assert plain.ascendc(X, soc="Ascend910B1") == plain.bind(X).ascendc(soc="Ascend910B1")


def test_keyword_only_and_positional_only_parameters():
    @hybrid(target="cpu")
    def kw_only(x, *, target):
        return x + target

    @hybrid(target="cpu")
    def pos_only(x, target, /):
        return x - target

    assert kw_only.kernel(X, target=1.0) is kw_only.bind(X, target=1.0).kernel()
    # a positional-only parameter cannot take the keyword: it is the option there
    assert pos_only.kernel(X, 1.0, target="cpu") is pos_only.bind(X, 1.0).kernel()
    np.testing.assert_allclose(kw_only(X, target=1.0), X + 1.0)


def test_parameters_named_like_the_methods_own_parameters(tmp_path):
    @hybrid(target="cpu")
    def odd(x, path, self, compile_fn=0.0):
        return x * path + self - compile_fn

    np.testing.assert_allclose(odd(X, path=2.0, self=1.0, compile_fn=0.5), X * 2.0 + 0.5)
    written = odd.dump_ir(tmp_path / "odd.ir", X, path=2.0, self=1.0)
    assert written.read_text() == odd.ir(X, 2.0, 1.0) + "\n"
    assert odd.specialize(X, path=2.0, self=1.0) is odd.bind(X, 2.0, 1.0).program
