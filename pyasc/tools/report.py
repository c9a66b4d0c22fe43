"""The data of ``pyasc doctor``: one :class:`CheckResult` per check, the
:class:`Context` the checks read, and the :class:`Report` that says which targets work.

A check is a small function ``(Context) -> CheckResult``; the tables of checks are in
:mod:`pyasc.tools.doctor`.  Statuses: ``ok``; ``warn`` (works, but something is worth
fixing); ``fail`` (this part is missing or broken); ``skip`` (not checked: what it
needs is absent, or it cannot be checked in this build).  A target is ready when every
check it needs (:data:`REQUIREMENTS`) is ``ok`` or ``warn``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pyasc.tools import cann_files

STATUSES = ("ok", "warn", "fail", "skip")

REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "cpu": ("llvmlite",),
    "ascend-sim": ("c++ compiler",),
    "ascend": ("cann-toolkit", "bisheng", "ld.lld", "ascendc-headers", "acl-library",
               "npu-devices", "device-nodes"),
}
"""The checks each target needs (``interpret`` needs nothing beyond numpy)."""


@dataclass(frozen=True)
class CheckResult:
    """One line of the report: what was checked, how it went, what was found and, for
    a problem, the exact fix."""

    name: str
    status: str
    found: str
    fix: str = ""

    def __post_init__(self) -> None:
        assert self.status in STATUSES, self.status


def _user_home() -> Path | None:
    try:
        return Path.home()
    except RuntimeError:  # no HOME and no password entry
        return None


@dataclass
class Context:
    """What the checks look at: the environment and the install roots (the real ones
    by default; tests point them at fake trees)."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    ascend_root: Path = Path("/usr/local/Ascend")
    dev_dir: Path = Path("/dev")
    user_home: Path | None = field(default_factory=lambda: _user_home())
    memo: dict[str, Any] = field(default_factory=dict)  # facts several checks read

    def which(self, name: str) -> str | None:
        """``name`` on this environment's ``PATH``."""
        return shutil.which(name, path=self.environ.get("PATH", ""))

    def run(self, cmd: Sequence[str], timeout: float = 30) -> tuple[int, str]:
        """(exit status, output) of ``cmd``; status -1 when it cannot be started."""
        try:
            proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                                  env=dict(self.environ))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return -1, str(exc)
        return proc.returncode, (proc.stdout + proc.stderr).strip()

    @cached_property
    def toolkit_lookup(self) -> tuple[cann_files.Toolkit | None, str | None]:
        return cann_files.find_toolkit(self.environ, self.ascend_root, self.user_home)

    @property
    def toolkit(self) -> cann_files.Toolkit | None:
        """The toolkit found (named by the environment, else installed by default)."""
        return self.toolkit_lookup[0]

    @cached_property
    def toolkit_version(self) -> cann_files.VersionInfo | None:
        return cann_files.toolkit_version(self.toolkit.home) if self.toolkit else None

    @cached_property
    def driver_version(self) -> cann_files.VersionInfo | None:
        return cann_files.driver_version(self.ascend_root)

    def set_env_fix(self) -> str:
        """The exact ``source`` command for the toolkit found, else the general one."""
        script = cann_files.set_env_script(self.toolkit.home) if self.toolkit else None
        if script is not None:
            return f"source {script}"
        return "source <ascend-toolkit>/set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/" \
               "set_env.sh)"


@dataclass(frozen=True)
class Report:
    """The results of every check, in order; iterate it like a list."""

    checks: tuple[CheckResult, ...]
    auto: str = "cpu"  # what target="auto" resolves to on the machine checked

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.checks)

    def __len__(self) -> int:
        return len(self.checks)

    def __getitem__(self, name: str) -> CheckResult:
        """The result of the check called ``name``."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def missing(self, target: str) -> list[CheckResult]:
        """The checks ``target`` needs that did not pass (empty: it can run here)."""
        return [self[n] for n in REQUIREMENTS.get(target, ())
                if self[n].status in ("fail", "skip")]

    def ready(self, target: str) -> bool:
        """Whether ``target`` can work on this machine."""
        return not self.missing(target)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (the ``--json`` output)."""
        return {"checks": [asdict(c) for c in self.checks], "auto": self.auto,
                "targets": {t: {"ready": self.ready(t),
                                "missing": [c.name for c in self.missing(t)]}
                            for t in REQUIREMENTS}}
