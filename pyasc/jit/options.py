"""Decorator options of ``@hybrid(...)``, their validation and target selection.

Options: ``target`` (``"auto"``, ``"cpu"``, ``"interpret"``, ``"ascend"``,
``"ascend-sim"``), ``dynamic_shape`` (one kernel for every shape), ``device_type`` (SoC
names the operator must compile for), ``fastmath`` (allow reassociation and
approximate math), ``boundscheck`` (run-time index checks, on by default: an index out
of bounds raises ``IndexOutOfBoundsError``, an ``IndexError``, on every target;
``boundscheck=False`` removes them and makes such an access undefined), ``cache`` (let
the backend use its on-disk kernel cache), ``device_float64`` (``"error"``, the default:
float64 device code on an ascend target is E50041; ``"demote"``: computed in float32 on
the device, with a warning; see docs/ascendc-backend.md), ``matmul_fma`` (on by
default: the CPU backend's float matmul steps are fused multiply-adds when the host has
FMA, as numpy's BLAS computes them; ``False``: a multiply and an add; see
docs/math-accuracy.md), ``sum_lanes`` (on by default: the CPU backend sums a loop's
float accumulator ``s += e`` in the order ``np.sum`` uses, lanes and compensated
blocks; ``False``: in the loop's order, bit-identical to the Python loop; see
docs/math-accuracy.md).

Target selection: an explicit ``target=`` on the decorator wins; otherwise the
``PYASC_TARGET`` environment variable (read at each call) overrides the default
``"auto"``; ``"auto"`` is ``"ascend"`` when AscendCL reports a device and CANN is
present (:func:`npu_available`), else ``"cpu"``
(decided once per process: devices and toolkits do not come and go while it runs).

Reading the variable is on every call's path, so :func:`target_env` reads it straight
from ``os.environ``'s backing dict (one dict lookup instead of ``os.environ.get``'s key
encoding, ~2 us under load) and :func:`resolve_target` validates each distinct value once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pyasc.errors import InvalidOptionError

TARGETS = ("auto", "cpu", "interpret", "ascend", "ascend-sim")
FLOAT64_MODES = ("error", "demote")  # device_float64: what float64 device code does
@dataclass(frozen=True)
class Options:
    """Validated decorator options (``target=None`` means "not given")."""

    target: str | None = None
    dynamic_shape: bool = False
    device_type: tuple[str, ...] | None = None
    fastmath: bool = False
    boundscheck: bool = True
    cache: bool = True
    device_float64: str = "error"
    matmul_fma: bool = True
    sum_lanes: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The options passed to passes and backends (``Program.options``)."""
        return {"dynamic_shape": self.dynamic_shape, "device_type": self.device_type,
                "fastmath": self.fastmath, "boundscheck": self.boundscheck,
                "cache": self.cache, "device_float64": self.device_float64,
                "matmul_fma": self.matmul_fma, "sum_lanes": self.sum_lanes}


OPTION_NAMES = tuple(f.name for f in fields(Options))


def make_options(kwargs: dict[str, Any]) -> Options:
    """Validate ``@hybrid(**kwargs)``; raises ``InvalidOptionError`` (E50041)."""
    unknown = sorted(set(kwargs) - set(OPTION_NAMES))
    if unknown:
        raise InvalidOptionError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                                 f"{', '.join(map(repr, unknown))}")
    target = kwargs.get("target")
    if target is not None and target not in TARGETS:
        raise InvalidOptionError(f"unknown target {target!r}",
                                 hint=f"choose one of {', '.join(TARGETS)}")
    for name in ("dynamic_shape", "fastmath", "boundscheck", "cache", "matmul_fma",
                 "sum_lanes"):
        if name in kwargs and not isinstance(kwargs[name], bool):
            raise InvalidOptionError(f"option {name!r} must be True or False")
    f64 = kwargs.get("device_float64", "error")
    if f64 not in FLOAT64_MODES:
        raise InvalidOptionError(f"unknown device_float64 {f64!r}",
                                 hint=f"choose one of {', '.join(map(repr, FLOAT64_MODES))}")
    return Options(target=target, device_type=_devices(kwargs.get("device_type")),
                   device_float64=f64,
                   **{k: kwargs[k] for k in ("dynamic_shape", "fastmath", "boundscheck",
                                             "cache", "matmul_fma", "sum_lanes") if k in kwargs})


def _devices(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items or \
            not all(isinstance(v, str) for v in items):
        raise InvalidOptionError("device_type must be a SoC name or a list of SoC names")
    # the SoC table's names and family aliases (lazy: only device_type needs the table)
    from pyasc.backend.ascendc.soc import ALIASES, SOCS

    known = sorted(set(SOCS) | set(ALIASES))
    bad = [v for v in items if v not in known]
    if bad:
        raise InvalidOptionError(f"unknown SoC {', '.join(map(repr, bad))}",
                                 hint=f"known SoCs: {', '.join(known)}")
    return tuple(items)


def _env_reader() -> tuple[Any, Any]:
    """(``get`` of ``os.environ``'s backing dict, the encoded key), or the public API
    where the platform's ``os.environ`` has no such dict."""
    data, encode = getattr(os.environ, "_data", None), getattr(os.environ, "encodekey", None)
    if isinstance(data, dict) and callable(encode):
        return data.get, encode(TARGET_VARIABLE)
    return os.environ.get, TARGET_VARIABLE


TARGET_VARIABLE = "PYASC_TARGET"
_ENV_GET, _ENV_KEY = _env_reader()


def target_env() -> object:
    """The raw ``PYASC_TARGET`` value (``None`` when unset).  While the variable is not
    changed, repeated reads return the same object, so callers may compare with ``is``."""
    return _ENV_GET(_ENV_KEY)


_READ = object()


def resolve_target(options: Options, env: object = _READ) -> str:
    """The concrete target of a call (``"auto"`` resolved); ``env``: the
    ``PYASC_TARGET`` value the caller read with :func:`target_env` (else read here)."""
    if options.target is not None:
        return auto_target() if options.target == "auto" else options.target
    return _env_target(target_env() if env is _READ else env)


def _env_target(raw: object) -> str:
    target = _RESOLVED.get(raw)
    if target is None:
        text = raw.decode() if isinstance(raw, bytes) else str(raw or "")
        env = text.strip()
        if env and env not in TARGETS:
            raise InvalidOptionError(f"PYASC_TARGET={env!r} is not a target",
                                     hint=f"choose one of {', '.join(TARGETS)}")
        target = env or "auto"
        target = auto_target() if target == "auto" else target
        if len(_RESOLVED) < 64:  # a handful of distinct values in any real process
            _RESOLVED[raw] = target
    return target


_RESOLVED: dict[object, str] = {}
"""Validated ``PYASC_TARGET`` values (raw) -> concrete target."""


@functools.cache
def auto_target() -> str:
    """``"ascend"`` when an NPU device and the CANN toolkit are present, else ``"cpu"``."""
    return "ascend" if npu_available() else "cpu"


def npu_available(environ: Mapping[str, str] | None = None,
                  ascend_root: str = "/usr/local/Ascend",
                  device: bool | None = None) -> bool:
    """A device and a builder of kernel objects.  The device: one AscendCL reports when
    its library is found (``PYASC_ACL_LIBRARY``, ``$ASCEND_HOME_PATH/lib64``,
    ``LD_LIBRARY_PATH``; ``device`` gives the answer instead), else none: nothing could
    launch on it.  The builder: a CANN toolkit (``ASCEND_HOME_PATH`` or the default
    install location), or the test knob ``PYASC_ASCEND_OBJECTS=ascend-sim``.  The
    arguments default to this machine (``pyasc doctor`` passes what it checked)."""
    env = os.environ if environ is None else environ
    if device is None:
        from pyasc.runtime.acl import device_available

        device = bool(device_available(env))  # None: no library at all
    if not device:
        return False
    if env.get("PYASC_ASCEND_OBJECTS", "").strip() == "ascend-sim":
        return True
    home = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME")
    return bool(home and Path(home).is_dir()) or \
        Path(ascend_root, "ascend-toolkit", "latest").is_dir()
