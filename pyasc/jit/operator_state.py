"""Device-resident state of an ``AscendOperator`` instance on ``target="ascend"``.

On the NPU, copying every state array (running statistics, caches, counters) to the
device and back on every call would dominate small operators.  So the first call
uploads each state array once and later calls hand the kernels the same device copy,
which they read and write in place.  The instance's numpy arrays are then behind the
device:

* ``op.sync_state()`` copies the device values into the instance's arrays (to read
  the state on the host); ``op.sync_state("device")`` uploads the instance's arrays
  (after changing them in place on the host);
* assigning a new array to the attribute (``op.mean = np.zeros(...)``) is seen at the
  next call: that array is uploaded instead.

Only arrays held directly by an attribute are kept on the device; an array inside a
tuple attribute travels with each call as any numpy argument does.  If the device
context is closed (``pyasc.runtime.acl.shutdown()``) while the device holds state the
host has not seen, that state is gone: the next call warns (W50033) and starts again
from the instance's arrays.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyasc.errors import DeviceStateLostWarning
from pyasc.runtime.acl import device_array


@dataclass
class _Copy:
    host: np.ndarray  # the instance's array the device copy was made from
    device: Any  # a pyasc.runtime.acl.DeviceArray
    ahead: bool = False  # a call may have written the device copy since the last sync


class DeviceState:
    """The device copies of one instance's state arrays, by attribute name."""

    def __init__(self) -> None:
        self._copies: dict[str, _Copy] = {}

    def arguments(self, names: list[str], values: list[Any]) -> list[Any]:
        """``values`` for one call, each array attribute replaced by its device copy
        (made now when there is none, the attribute was reassigned, or its context is
        gone); every copy handed out is then counted as ahead of the host."""
        out = []
        for name, value in zip(names, values, strict=True):
            if type(value) is not np.ndarray:
                out.append(value)
                continue
            copy = self._copies.get(name)
            if copy is None or copy.host is not value or not copy.device.buffer.alive:
                if copy is not None and copy.host is value and copy.ahead:
                    warnings.warn(DeviceStateLostWarning(
                        f"the device copy of self.{name} was lost when the device "
                        "context closed; the call starts again from the instance's "
                        "array, which holds the state of the last sync_state()"),
                        stacklevel=4)
                copy = self._copies[name] = _Copy(value, device_array(value))
            copy.ahead = True
            out.append(copy.device)
        return out

    def to_host(self) -> None:
        """Copy every live device copy into the instance's array it was made from."""
        for copy in self._copies.values():
            if copy.device.buffer.alive:
                copy.host[...] = copy.device.numpy()
                copy.ahead = False

    def to_device(self) -> None:
        """Upload the instance's arrays into their device copies."""
        for copy in self._copies.values():
            if copy.device.buffer.alive:
                copy.device.copy_from(copy.host)
                copy.ahead = False


__all__ = ["DeviceState"]
