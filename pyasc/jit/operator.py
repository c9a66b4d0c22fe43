"""``AscendOperator``: class-style operators whose state lives on the instance.

::

    class RunningNorm(AscendOperator):
        hybrid_options = dict(target="cpu")          # @hybrid's options, per class

        def __init__(self, n, momentum=0.9):
            self.mean = np.zeros(n, np.float32)      # an array: state, a kernel input
            self.momentum = momentum                 # a number: a compile-time constant

        def compute(self, x):                        # compiled like a @hybrid body
            self.mean[:] = self.momentum * self.mean + (1 - self.momentum) * x.mean(axis=0)
            return x - self.mean

``op(x)`` calls ``compute``.  It is compiled once per class as a ``@hybrid`` function
(an :class:`OperatorFunction`) whose parameters are the attributes the methods read
(``pyasc.frontend.methods`` rewrites ``self.<name>``) followed by compute's own; each
call passes the instance's current values.  An array attribute is passed by reference,
so what compute writes into it (running statistics, counters) is in the instance's
array afterwards, as with numpy.  Any other attribute (a number, a string, a tuple, a
dtype) is specialized by value: changing it selects (or compiles) another kernel.
Helper methods are inlined; other ``@hybrid`` functions can be called.  ``op.ir``,
``op.kernel``, ``op.ascendc``, ``op.bind`` and ``op.specializations`` mirror a
``@hybrid`` function's.  ``target="interpret"`` calls ``compute`` itself.
"""

from __future__ import annotations

import inspect
import linecache
import re
import threading
from collections.abc import Mapping
from types import FunctionType
from typing import Any, ClassVar

import numpy as np

from pyasc.callsite import at_caller, public_api
from pyasc.errors import (
    InvalidOptionError,
    PyascError,
    UndefinedNameError,
    UnsupportedSyntaxError,
)
from pyasc.frontend.callee import Callee
from pyasc.jit.decoratable import refusal
from pyasc.jit.decorator import HybridFunction
from pyasc.jit.fingerprint import parse_source
from pyasc.jit.operator_state import DeviceState
from pyasc.jit.options import Options, make_options, resolve_target
from pyasc.jit.tensors import is_tensor

_CONSTANTS = (bool, int, float, str, type(None), np.generic, np.dtype, type)
COUNTER_HINT = ("keep it in an array, e.g. self.count = np.zeros((), np.int64), which "
                "'self.count += 1' updates in place")


def _read_source(fn: FunctionType) -> Any:
    from pyasc.frontend.source import load_source

    return parse_source(fn) or load_source(fn)


class OperatorFunction(HybridFunction):
    """``compute`` of one operator class, compiled as a ``@hybrid`` function of the
    attributes it reads (first, positional-only) and its own parameters."""

    def __init__(self, cls: type, compute: FunctionType, options: Options) -> None:
        from pyasc.frontend.methods import rewrite_operator

        methods = rewrite_operator(cls, compute, _read_source)
        own = list(inspect.signature(compute).parameters.values())[1:]
        state = [inspect.Parameter(a.param, inspect.Parameter.POSITIONAL_ONLY)
                 for a in methods.attributes.values()]
        super().__init__(compute, options, signature=inspect.Signature(state + own))
        self.__name__ = f"{cls.__name__}_compute"
        self._cls = cls
        self._methods = methods
        self._source = methods.compute

    def __repr__(self) -> str:
        return f"<compute of operator {self._cls.__qualname__}>"

    def bindings(self) -> dict[str, object]:
        return dict(self._methods.callees)

    def related(self) -> list[tuple[str, object]]:
        """The class's methods: compute may inline any of them (part of the cache key)."""
        out: list[tuple[str, object]] = []
        for klass in self._cls.__mro__:
            if klass in (AscendOperator, object):
                continue
            for name, value in vars(klass).items():
                value = value.__func__ if isinstance(value, staticmethod) else value
                if isinstance(value, FunctionType | Callee) and not name.startswith("__"):
                    out.append((f"{klass.__qualname__}.{name}", value))
        return out

    def state_of(self, op: AscendOperator) -> list[Any]:
        """The values of the attributes compute reads, for one call; the paths of the
        constants among them are specialized by value from now on."""
        methods = self._methods
        own = getattr(op, "__dict__", None)
        if methods.methods and own and not own.keys().isdisjoint(methods.methods):
            name = next(n for n in methods.methods if n in own)
            raise methods.methods[name].error(  # Python would call the instance's value
                UnsupportedSyntaxError, f"self.{name} is set on the instance, hiding the "
                "method compute calls", hint=f"give the attribute or the method {name} "
                "another name")
        try:
            values = [getattr(op, name) for name in methods.attributes]
        except AttributeError:
            raise self._missing(op) from None
        if not all(type(v) is np.ndarray for v in values):  # (the common case: state)
            self._learn_constants(values)
        return values

    def state_names(self) -> list[str]:
        """The attribute names of :meth:`state_of`'s values, in order."""
        return [read.attr for read in self._methods.attributes.values()]

    def _missing(self, op: AscendOperator) -> PyascError:
        read = next(r for r in self._methods.attributes.values() if not hasattr(op, r.attr))
        return read.error(UndefinedNameError, f"'{type(op).__name__}' object has no "
                          f"attribute '{read.attr}'", hint=f"set it in __init__ "
                          f"(self.{read.attr} = ...) before calling the operator")

    def _learn_constants(self, values: list[Any]) -> None:
        constants: set[tuple] = set()
        for read, value in zip(self._methods.attributes.values(), values, strict=True):
            if isinstance(value, np.ndarray) or is_tensor(value):  # state, by reference
                continue
            if read.augmented is not None:
                raise read.error(UnsupportedSyntaxError, f"self.{read.attr} is a "
                                 f"{type(value).__name__}, a compile-time constant: "
                                 "compute cannot change it", COUNTER_HINT, read.augmented)
            _constant_paths(value, (read.param,), constants, read)
        if not constants <= self._calls.by_value:
            self._calls.learn(constants)


def _constant_paths(value: object, path: tuple, out: set[tuple], read: Any) -> None:
    """Add the paths of ``value``'s compile-time leaves (arrays inside a tuple are
    state); refuse values compute cannot use."""
    if isinstance(value, np.ndarray) or is_tensor(value):
        return
    if type(value) in (tuple, list):
        for i, item in enumerate(value):  # type: ignore[attr-defined]
            _constant_paths(item, (*path, i), out, read)
        return
    if not isinstance(value, _CONSTANTS):
        raise read.error(UnsupportedSyntaxError, f"self.{read.attr} is a "
                         f"{type(value).__name__}, which compute cannot use",
                         "use arrays (state), numbers, strings, dtypes or tuples of them; "
                         "call @hybrid functions by name or define them in the class body")
    out.add(path)


class AscendOperator:
    """Base class of class-style operators: subclass it, set the state in ``__init__``
    and write ``compute(self, ...)`` like a ``@hybrid`` function body.  Options go in
    the class attribute ``hybrid_options`` (``@hybrid``'s keywords)."""

    hybrid_options: ClassVar[dict[str, Any]] = {}
    _pyasc_options: ClassVar[Options] = Options()
    _pyasc_function: ClassVar[OperatorFunction | None] = None
    _pyasc_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        options = cls.__dict__.get("hybrid_options", cls.hybrid_options)
        try:
            if not isinstance(options, Mapping):
                raise InvalidOptionError(f"{cls.__name__}.hybrid_options must be a dict of "
                                         "@hybrid's options, e.g. dict(target='cpu')")
            cls._pyasc_options = make_options(dict(options))
        except PyascError as exc:
            raise at_caller(exc) from None
        cls._pyasc_function = None
        cls._pyasc_lock = threading.Lock()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _check_compute(cls)
        return super().__new__(cls)

    @classmethod
    def _function(cls) -> OperatorFunction:
        fn = cls.__dict__.get("_pyasc_function")
        if fn is None:
            with cls._pyasc_lock:
                fn = cls.__dict__.get("_pyasc_function")
                if fn is None:
                    fn = OperatorFunction(cls, cls.__dict__.get("compute") or cls.compute,
                                          cls._pyasc_options)
                    cls._pyasc_function = fn
        return fn

    def _bound(self, args: tuple) -> tuple[OperatorFunction, tuple]:
        fn = type(self)._function()
        return fn, (*fn.state_of(self), *args)

    @public_api
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run ``compute`` compiled for the operator's target (``interpret``: as Python;
        ``ascend``: with the state arrays kept on the device, see :meth:`sync_state`)."""
        target = resolve_target(type(self)._pyasc_options)
        if target == "interpret":
            return type(self).compute(self, *args, **kwargs)  # type: ignore[attr-defined]
        fn = type(self)._function()
        state = fn.state_of(self)
        if target == "ascend":
            state = self._device_state().arguments(fn.state_names(), state)
        return fn(*state, *args, **kwargs)

    @public_api
    def sync_state(self, to: str = "host") -> None:
        """On ``target="ascend"``, where the state arrays stay on the device between
        calls: ``"host"`` copies the device state into the instance's arrays (to read
        it), ``"device"`` uploads the instance's arrays (after changing them in place).
        Other targets use the instance's arrays directly: nothing to do."""
        if to not in ("host", "device"):
            raise InvalidOptionError(f"sync_state(to={to!r}): 'host' or 'device'")
        state = self.__dict__.get("_pyasc_device_state")
        if state is not None:
            state.to_host() if to == "host" else state.to_device()

    def _device_state(self) -> DeviceState:
        state = self.__dict__.get("_pyasc_device_state")
        if state is None:
            state = self.__dict__["_pyasc_device_state"] = DeviceState()
        return state

    @public_api
    def bind(self, *args: Any, **kwargs: Any) -> Any:
        """This call bound for inspection, as ``HybridFunction.bind``."""
        fn, call = self._bound(args)
        return fn.bind(*call, **kwargs)

    @public_api
    def ir(self, *args: Any, **kwargs: Any) -> str:
        """IR of compute for these arguments and the current state, as ``fn.ir``."""
        fn, call = self._bound(args)
        return fn.ir(*call, **kwargs)

    @public_api
    def kernel(self, *args: Any, **kwargs: Any) -> Any:
        """The compiled kernel of this call (``target=`` as ``fn.kernel``)."""
        fn, call = self._bound(args)
        return fn.kernel(*call, **kwargs)

    @public_api
    def ascendc(self, *args: Any, **kwargs: Any) -> str:
        """The AscendC source of this call (``soc=`` as ``fn.ascendc``)."""
        fn, call = self._bound(args)
        return fn.ascendc(*call, **kwargs)

    @property
    def specializations(self) -> Any:
        """The compiled specializations of this operator class (``fn.specializations``)."""
        return type(self)._function().specializations


def _check_compute(cls: type) -> None:
    """Refuse an operator class without a compilable ``compute`` (at its class line)."""
    compute = inspect.getattr_static(cls, "compute", None)
    if compute is None:
        err: PyascError = UnsupportedSyntaxError(
            f"operator class '{cls.__name__}' has no compute method",
            hint="define 'def compute(self, ...)': the body pyasc compiles")
    else:
        refused = refusal(compute)
        if refused is None:
            return
        err = UnsupportedSyntaxError(f"{cls.__name__}.compute: {refused.message}",
                                     hint="define compute as a plain 'def compute(self, ...)'")
    raise _at_class(err, cls)


def _at_class(err: PyascError, cls: type) -> PyascError:
    """Locate ``err`` at the ``class`` statement of ``cls`` (else at the caller)."""
    found = _class_line(cls)
    if found is None:
        return at_caller(err)
    filename, lineno, line = found
    col = len(line) - len(line.lstrip())
    return err.with_location(filename, lineno, col, col + len(f"class {cls.__name__}"), line)


def _class_line(cls: type) -> tuple[str, int, str] | None:
    """(file, line, text) of ``class <name>``: from ``inspect``, else searched upwards
    from one of its methods (a module ``inspect`` cannot find, e.g. not imported by
    name)."""
    try:
        lines, first = inspect.getsourcelines(cls)
        return inspect.getsourcefile(cls) or "<unknown>", first, lines[0].rstrip("\n")
    except (OSError, TypeError):
        pass
    pattern = re.compile(rf"\s*class\s+{re.escape(cls.__name__)}\b")
    for value in vars(cls).values():
        code = getattr(value, "__code__", None)
        if code is None:
            continue
        lines = linecache.getlines(code.co_filename)
        for lineno in range(min(code.co_firstlineno, len(lines)), 0, -1):
            if pattern.match(lines[lineno - 1]):
                return code.co_filename, lineno, lines[lineno - 1].rstrip("\n")
    return None
