"""Entries of a ``@hybrid`` function's specializations: loaded by key or compiled.

``EntryMaker`` is the part of :class:`~pyasc.jit.decorator.HybridFunction` that turns a
call's bound arguments into the :class:`~pyasc.jit.dispatch.Entry` of its
specialization: compute the key, ask the backend to ``load`` a kernel stored under the
program key (no IR built: a fresh process runs no frontend), else build the IR and
compile, one build per key however many threads ask (``SingleFlight``).  A key can
change while this runs: the disk cache, or the compile, may learn that more arguments
are specialized by value; then the work returns :data:`RETRY` and the caller starts
over with the new signature generation.
"""

from __future__ import annotations

import time
from typing import Any

from pyasc.backend.base import get_backend
from pyasc.frontend.signature import Spec, params_of
from pyasc.jit.dispatch import Entry, Generation, make_entry
from pyasc.jit.facts import load_by_value
from pyasc.jit.fingerprint import program_key
from pyasc.jit.specializations import signature_text
from pyasc.runtime.profiler import note_compile

RETRY = object()  # the key changed (arguments now specialized by value): start over
ByValue = frozenset[tuple]


class EntryMaker:
    """Mixin: the entry of a call's specialization (see the module docstring).

    Uses the host class's ``_calls`` (signature generations and entries by key),
    ``_flights``, ``_windows``, ``_kernels``, ``_arguments``, ``_key_of``, ``_built``
    and ``_kernel_for``.
    """

    def _entry(self, target: str, args: tuple, kwargs: dict[str, Any]
               ) -> tuple[Entry, Generation]:
        """The entry of this call's specialization (loaded by key or compiled) and the
        signature generation its key was computed with."""
        arguments = self._arguments(args, kwargs, devices=target == "ascend")
        while True:
            gen = self._calls.current
            entry = self._entry_with(target, arguments, gen.by_value)
            if entry is not RETRY:
                return entry, gen

    def _entry_with(self, target: str, arguments: dict[str, Any], by_value: ByValue) -> Any:
        """The entry of the key of ``arguments`` under ``by_value``, or :data:`RETRY`."""
        specs, key = self._key_of(arguments, by_value)
        entry = self._calls.by_key.get((target, key))
        if entry is not None:
            return entry
        return self._flights.run(("entry", target, key),
                                 lambda: self._make_entry(target, key, specs, by_value))

    def _make_entry(self, target: str, key: tuple, specs: dict[str, Spec],
                    by_value: ByValue) -> Any:
        """The entry of ``key`` for ``target``, stored in ``by_key``, or :data:`RETRY`
        when more arguments are now specialized by value."""
        entry = self._calls.by_key.get((target, key))
        if entry is not None:  # stored by a flight that ended since the caller looked
            return entry
        start = time.perf_counter_ns()
        entry, source = self._load_entry(target, key, specs, by_value), "disk"
        if entry is RETRY:
            return entry
        if entry is None:
            spec = self._built(key, specs, by_value)
            if spec is None:
                return RETRY
            entry, source = make_entry(self, specs, spec.program.call_data,
                                       self._kernel_for(spec, target)), "compiled"
        if key in self._windows.generic_keys and entry.native is not None:
            self._windows.generic_natives.add(entry.native)
        self._calls.by_key[(target, key)] = entry
        note_compile(self.__name__, target, source, start)
        return entry

    def _load_entry(self, target: str, key: tuple, specs: dict[str, Spec],
                    by_value: ByValue) -> Any:
        """An entry for a kernel the backend stored under this key (no IR is built),
        :data:`RETRY` if the disk cache knows more by-value arguments, else ``None``."""
        from pyasc.ir.dumps import dumping  # (not at ``import pyasc``)

        if not self.options.cache or not self.key_source() or dumping():
            return None  # (dumping the IR: compile, so that the passes run and dump)
        load = getattr(get_backend(target), "load", None)
        if load is None:
            return None
        options = self._windows.options(key, self.options.as_dict())
        pkey = program_key(self, key, options)
        kernel = load(pkey, self.__name__, options)
        fits = getattr(kernel, "fits", None)
        if fits is not None and not fits([p.type for p in params_of(specs)]):
            kernel = None  # a stored ABI other than this signature's: compile (and rewrite)
        if kernel is not None:
            try:
                entry = make_entry(self, specs, kernel.call_data, kernel)
            except (KeyError, ValueError, TypeError, IndexError):  # foreign call data
                return None
            self._kernels[(key, target)] = kernel
            if hasattr(kernel, "dump_loaded"):  # PYASC_DUMP_PATH: what a hit has, and lacks
                from pyasc.ir.stage_dumps import DumpSite

                kernel.dump_loaded(DumpSite(self.__name__, pkey, signature_text(key)), False)
            return entry
        learned = load_by_value(pkey)
        if learned - by_value:
            self._calls.learn(learned)
            return RETRY
        return None
