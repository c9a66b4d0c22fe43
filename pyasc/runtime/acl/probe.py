"""What AscendCL says about this machine, without raising: :func:`probe`.

For ``pyasc doctor`` and ``target="auto"``: the library found, whether ``aclInit``
worked, the device count and SoC names, or the error that stopped the probe.
``aclrtGetSocName`` takes no device (it names the SoC of the machine's devices), so
``soc_names`` repeats it once per device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pyasc.errors import PyascError
from pyasc.runtime.acl.context import device_count, initialize, soc_name
from pyasc.runtime.acl.lookup import find_library, load_library


@dataclass
class DeviceProbe:
    """The result of :func:`probe`; ``error`` is ``None`` when every step worked."""

    library: Path | None
    initialized: bool
    device_count: int
    soc_names: tuple[str, ...]
    error: str | None


def probe(environ: Mapping[str, str] | None = None) -> DeviceProbe:
    """Load the library, ``aclInit``, count the devices and name their SoC."""
    lookup = find_library(environ)
    if lookup.path is None:
        return DeviceProbe(None, False, 0, (), lookup.reason)
    result = DeviceProbe(lookup.path, False, 0, (), None)
    try:
        lib = load_library(environ)
        initialize(lib)
        result.initialized = True
        result.device_count = device_count(lib)
        if result.device_count:
            result.soc_names = (soc_name(lib),) * result.device_count
    except PyascError as exc:
        result.error = str(exc).splitlines()[0]
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def device_available(environ: Mapping[str, str] | None = None) -> bool | None:
    """``True``/``False`` when an AscendCL library answers whether a device exists,
    ``None`` when no library is found (the caller falls back to ``/dev/davinci*``)."""
    if find_library(environ).path is None:
        return None
    found = probe(environ)
    return found.error is None and found.device_count > 0
