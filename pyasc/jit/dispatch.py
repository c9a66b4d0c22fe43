"""Finding and calling a compiled specialization with as little Python as possible.

Three levels, fastest first:

1. ``HybridFunction.__call__`` calls the *native entry* of the specialization it used
   last (a builtin function generated with the kernel: it checks every argument against
   the specialization, allocates the outputs and calls the kernel), then those of a few
   other recent ones; each answers ``pyasc.runtime.MISS`` (in ~50 ns) for arguments of
   another specialization.
2. :class:`CallTable` maps a cheap *signature* of the arguments (type, dtype, shape and
   strides of arrays, type of scalars, value of compile-time arguments, tuple structure;
   computed straight from the arguments) to an :class:`Entry`: the native entry if there
   is one, else a Python caller generated once per specialization (straight-line code:
   no loop over the arguments).
3. On a miss, the decorator binds the arguments, computes the specialization key and
   loads or compiles the kernel; the signature is then added to the table.

A signature determines the specialization key (the key is a function of exactly the
properties in it), so a table hit can never select another specialization; what it does
not cover (alignment, writeability, an integer's range) the callers check on every call.

Threads: one design for every table of a ``HybridFunction`` (``decorator``); no lock is
held while a kernel runs, and compiled code runs without the GIL, so calls from many
threads run in parallel:

* what a first call builds (the IR of a key, the kernel of a key and target, the call
  entry of a target and key) is built once: a per-function ``SingleFlight``
  (``pyasc.runtime.flight``) lets the first thread build it while the others asking for
  the same thing wait for its result; different keys build at the same time;
* the by-value argument paths only grow, under the :class:`CallTable`'s lock, each set
  with its own signature table (:class:`Generation`); a key is always computed from one
  snapshot of the set, and an entry is stored in the generation its key was computed
  with; compiling asks again only for paths outside the key's snapshot (another thread
  learning them first makes this thread retry, not fail);
* the results (``_specs``, ``_kernels``, ``by_key``) are dicts written once per key, by
  the thread that built the value, and read without locks;
* the call fast path reads one immutable tuple (target variable, native entries):
  every native entry checks all arguments against its own specialization, so a stale
  or lost update costs a miss, never a kernel of another specialization.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from pyasc.callsite import at_caller
from pyasc.errors import ArgumentError
from pyasc.frontend.signature import SHAPE, Spec, params_of
from pyasc.jit.arguments import Converted, describe
from pyasc.jit.callplan import CallTemplate, convert, template_from_json
from pyasc.jit.specialize import layout_of

MAX_SIGNATURES = 1024
"""Signatures remembered per function (strided views of many shapes could otherwise
grow the table without bound); the table is cleared when full."""

_SCALARS = frozenset({bool, int, float})
_CONSTANTS = (bool, int, float, np.generic, str, type(None), np.dtype, type)
_EMPTY = inspect.Parameter.empty
_ndarray = np.ndarray


class Signatures:
    """Signature computation for one function, given which argument paths are
    specialized by value and whether shapes are dynamic."""

    def __init__(self, signature: inspect.Signature, by_value: set[tuple],
                 dynamic: bool) -> None:
        self.names = tuple(signature.parameters)
        self.defaults = tuple(p.default for p in signature.parameters.values())
        self.exact = {name: {p[1:] for p in by_value if p[0] == name} for name in self.names}
        self.array = _dynamic_array if dynamic else _static_array
        # under dynamic shapes, the by-value dimensions of each array: (name, path) -> axes
        self.dims = _by_value_dims(self.exact) if dynamic else {}
        # the common case, arrays and Python scalars, none by value: one call per argument
        self.quick = None if dynamic or any(self.exact.values()) else _quick

    def of(self, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
        """The signature of a call, or ``None`` when it has none (extra positional
        arguments, unhashable values: the full path reports or handles those)."""
        names = self.names
        if len(args) > len(names):
            return None
        quick = self.quick
        if quick is not None:
            try:
                sig = tuple([quick(v) for v in args])
                if kwargs:  # (name, entry) pairs: never equal to a positional entry
                    sig += tuple([(k, quick(v)) for k, v in kwargs.items()
                                  if k in self.exact or _unknown()])
                return sig
            except _NotQuick:
                pass
        try:
            sig = tuple(self._arg(v, n, ()) for v, n in zip(args, names, strict=False))
            if kwargs:
                sig += tuple((k, self._arg(v, k, ())) for k, v in kwargs.items())
        except KeyError:  # an unknown keyword: binding reports it
            return None
        except _NotQuick:  # an argument to convert or refuse: always the full path
            return None
        return sig

    def positional(self, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
        """The call with keywords and defaults put in their places (for the native
        entry, which takes positions), or ``None`` when binding would fail."""
        n = len(args)
        rest = self.names[n:]
        if len(rest) == len(kwargs):  # every later parameter given by keyword
            try:
                return args + tuple([kwargs[name] for name in rest])
            except KeyError:
                return None
        out = list(args)
        for name, default in zip(rest, self.defaults[n:], strict=True):
            value = kwargs.get(name, default)
            if value is _EMPTY:
                return None
            out.append(value)
        return tuple(out) if sum(name in kwargs for name in rest) == len(kwargs) else None

    def _arg(self, v: object, name: str, path: tuple) -> object:
        t = type(v)
        exact = self.exact[name]
        if t is _ndarray or isinstance(v, _ndarray):
            axes = self.dims.get((name, path)) if self.dims else None
            if axes:  # by-value dimensions of a run-time shape
                return (*self.array(v, t), tuple([v.shape[a] for a in axes]))
            return self.array(v, t)
        if t is tuple or t is list:
            return (t, *(self._arg(x, name, (*path, i)) for i, x in enumerate(v)))
        if t in _SCALARS and path not in exact:
            return t
        if isinstance(v, np.generic) and path not in exact:
            return t
        if isinstance(v, _CONSTANTS):  # compile-time values (by-value scalars, None,
            return (t, v)  # dtypes, strings)
        raise _NotQuick  # anything ``arguments.prepare`` converts or refuses


def _by_value_dims(exact: dict[str, set[tuple]]) -> dict[tuple, tuple[int, ...]]:
    """The axes specialized by value of each array, keyed by (argument name, path
    inside the argument), from the by-value paths ``(*path, SHAPE, axis)``."""
    out: dict[tuple, list[int]] = {}
    for name, paths in exact.items():
        for p in paths:
            if len(p) >= 2 and p[-2] == SHAPE:
                out.setdefault((name, p[:-2]), []).append(p[-1])
    return {k: tuple(sorted(axes)) for k, axes in out.items()}


class _NotQuick(Exception):  # noqa: N818 - control flow
    """An argument :func:`_quick` leaves to the general rules (or, raised by those, an
    argument that has no signature)."""


def _unknown() -> bool:
    raise _NotQuick  # an unknown keyword: the general rules return None for it


def _quick(v: object) -> object:
    """The signature entry of an exact ndarray (dtype, shape, strides: they determine
    dtype name and byte order, rank, layout class and shape) or a Python scalar (its type),
    when nothing is by value and shapes are static.  Distinct from every entry the
    general rules make, which start with a type."""
    t = type(v)
    if t is _ndarray:  # the dtype itself: a non-native byte order is another entry
        return (v.dtype, v.shape, v.strides)  # type: ignore[attr-defined]
    if t in _SCALARS:
        return t
    raise _NotQuick


def _static_array(a: np.ndarray, t: type) -> tuple:
    return (t, a.dtype, a.shape, a.strides)


def _dynamic_array(a: np.ndarray, t: type) -> tuple:
    return (t, a.dtype, a.ndim, layout_of(a))


class Entry:
    """One specialization ready to call: ``native(*args)`` (or ``None``) and
    ``call(args, kwargs)``, the generated Python caller; ``writes``: the argument paths
    (flat parameters) the kernel may write into."""

    __slots__ = ("call", "kernel", "native", "template", "writes")

    def __init__(self, kernel: Any, template: CallTemplate, call: Callable,
                 native: Callable | None, writes: frozenset[tuple] = frozenset()) -> None:
        self.kernel = kernel
        self.template = template
        self.call = call
        self.native = native
        self.writes = writes

    def refuse_writes(self, converted: Converted) -> None:
        """Raise :class:`ArgumentError` if the kernel may write into an argument that
        ``arguments.prepare`` converted (the write would land in pyasc's copy)."""
        for path, reason in converted.reasons.items():
            if any(w[:len(path)] == path for w in self.writes):
                raise at_caller(ArgumentError(
                    f"argument {describe(path)} {reason.split(';')[0]}: pyasc passes a "
                    "read-only conversion of it, but the operator writes into it",
                    hint=reason.split("; ", 1)[1]))


def make_entry(hf: Any, specs: dict[str, Spec], call_data: dict[str, Any],
               kernel: Any) -> Entry:
    """The entry of a specialization of ``hf`` (``specs``) whose ``kernel`` was compiled
    or loaded with ``call_data``."""
    from pyasc.runtime.threads import check_environment  # (hashlib, ctypes: not at import)

    check_environment()  # a bad PYASC_NUM_THREADS is reported when a kernel is made ready
    template = template_from_json(call_data["template"])
    call = python_caller(hf, specs, template, kernel)
    native = None
    make_native = getattr(kernel, "native_entry", None)
    if make_native is not None and call_data.get("native") is not None:
        native = make_native(_defaults(hf.__signature__))
    params = params_of(specs)
    writes = frozenset(params[int(i)].path for i in call_data.get("writes", range(len(params))))
    return Entry(kernel, template, call, native, writes)


def _defaults(signature: inspect.Signature) -> list[object]:
    return [p.default for p in signature.parameters.values()
            if p.default is not inspect.Parameter.empty]


def python_caller(hf: Any, specs: dict[str, Spec], template: CallTemplate,
                  kernel: Any) -> Callable[[tuple, dict], Any]:
    """``call(args, kwargs)``: flatten, call ``kernel``, rebuild the result; generated
    as straight-line code for this specialization."""
    params = hf.__signature__.parameters
    positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                     for p in params.values())
    names = [f"a{i}" for i in range(len(specs))]
    flat = [f"{name}{''.join(f'[{i}]' for i in path)}"
            for name, spec in zip(names, specs.values(), strict=True)
            for path in _leaf_paths(spec, ())]
    # ``__name__``: errors raised through it are located past it (pyasc.callsite)
    env: dict[str, Any] = {"__name__": __name__, "kernel": kernel, "bind": _binder(hf)}
    lines = ["def call(args, kwargs):",
             f"    if kwargs or len(args) != {len(specs) if positional else -1}:",
             "        args = bind(args, kwargs)"]
    if names:
        lines.append(f"    {', '.join(names)}, = args")
    lines += [f"    flat = [{', '.join(flat)}]", "    r = kernel(flat)",
              f"    return {_result_expr(template.shape, template.params, env)}"]
    exec("\n".join(lines), env)  # generated from the key and template, never user text
    call = env["call"]
    call.__doc__ = "\n".join(lines)
    return call


def _binder(hf: Any) -> Callable[[tuple, dict], tuple]:
    def bind(args: tuple, kwargs: dict[str, Any]) -> tuple:
        return tuple(hf._arguments(args, kwargs).values())
    return bind


def _leaf_paths(spec: Spec, path: tuple) -> list[tuple]:
    if spec[0] in ("tuple", "list"):
        return [p for i, s in enumerate(spec[1:]) for p in _leaf_paths(s, (*path, i))]
    return [] if spec[0] == "const" else [path]


def _result_expr(shape: Any, params: tuple[int | None, ...], env: dict[str, Any]) -> str:
    kind = shape[0]
    if kind in ("tuple", "list"):
        items = "".join(_result_expr(s, params, env) + ", " for s in shape[1])
        return f"({items})" if kind == "tuple" else f"[{items}]"
    name = f"c{len(env)}"
    if kind == "const":
        env[name] = shape[1]
        return name
    j = shape[1]
    if params and params[j] is not None:
        return f"flat[{params[j]}]"
    env[name] = convert(shape[2])
    return f"{name}(r[{j}])"


class Generation:
    """The signature table for one set of by-value argument paths.

    The set only grows; when it does, the table gets a new generation instead of
    changing this one, so a signature is only ever stored in, and looked up in, the
    table of the rules that computed it (a thread still holding an older generation
    reads and writes that one, which no later call consults)."""

    __slots__ = ("by_sig", "by_value", "signatures")

    def __init__(self, signature: inspect.Signature, by_value: frozenset[tuple],
                 dynamic: bool) -> None:
        self.by_value = by_value
        # positions do not map to names with *args: such calls always bind
        varargs = any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values())
        self.signatures = None if varargs else Signatures(signature, set(by_value), dynamic)
        self.by_sig: dict[tuple, Entry] = {}

    def signature(self, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
        """The call's signature (``None`` if it has none; it may be unhashable)."""
        sigs = self.signatures
        return None if sigs is None else sigs.of(args, kwargs)

    def find(self, target: str, sig: tuple | None) -> Entry | None:
        """The entry remembered for signature ``sig``, if any."""
        if sig is None:
            return None
        try:
            return self.by_sig.get((target, sig))
        except TypeError:  # an unhashable argument
            return None

    def remember(self, target: str, sig: tuple | None, entry: Entry) -> None:
        """Route later calls with signature ``sig`` to ``entry``, whose key was computed
        with this generation's by-value paths (or fewer)."""
        if sig is None:
            return
        by_sig = self.by_sig
        if len(by_sig) >= MAX_SIGNATURES:
            by_sig.clear()
        try:
            by_sig[(target, sig)] = entry
        except TypeError:
            pass


class CallTable:
    """Per-function tables: signature -> entry (the current :class:`Generation`) and
    (target, key) -> entry.  Only :meth:`learn` reads and writes under the lock; lookups
    read one attribute or one dict item, which another thread's update cannot tear."""

    def __init__(self, signature: inspect.Signature, dynamic: bool) -> None:
        self._signature = signature
        self._dynamic = dynamic
        self._lock = threading.Lock()
        self.by_key: dict[tuple, Entry] = {}
        self.current = Generation(signature, frozenset(), dynamic)

    @property
    def by_value(self) -> frozenset[tuple]:
        """The argument paths specialized by value (so far)."""
        return self.current.by_value

    @property
    def by_sig(self) -> dict[tuple, Entry]:
        """The current generation's signature table."""
        return self.current.by_sig

    @property
    def signatures(self) -> Signatures | None:
        """The current generation's signature rules."""
        return self.current.signatures

    def clear(self) -> None:
        """Forget every entry (the by-value paths stay): later calls load or compile."""
        with self._lock:
            self.by_key.clear()
            self.current = Generation(self._signature, self.current.by_value, self._dynamic)

    def learn(self, params: set[tuple] | frozenset[tuple]) -> bool:
        """Specialize ``params`` by value from now on; ``False`` if they already were."""
        with self._lock:
            by_value = self.current.by_value
            if params <= by_value:
                return False
            self.current = Generation(self._signature, by_value | params, self._dynamic)
            return True
