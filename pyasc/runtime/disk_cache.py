"""The on-disk kernel cache: object code plus a JSON manifest per key, never pickle.

Layout under the cache root (``PYASC_CACHE_DIR``, else ``$XDG_CACHE_HOME/pyasc``, else
``~/.cache/pyasc``)::

    <backend>/<key[:2]>/<key>.json             the manifest (plain JSON)
    <backend>/<key[:2]>/<key>-<sha[:16]>.o     the object file it names

The manifest records its own key, the object's file name, size and SHA-256, and
whatever the backend needs to call the code (entry symbols, calling convention, buffer
shapes, error table, versions), and ``seal``: one SHA-256 over every other field of the
manifest (its canonical JSON) and the object's bytes.  Nothing on disk is trusted
unsealed: an entry whose JSON does not parse, whose key differs, whose object is missing,
or whose seal does not match the manifest and object read back (one digit of a stored
buffer shape edited, an object swapped together with its recorded hash) is treated as
absent, so the caller compiles again and overwrites it.  The seal detects corruption
and edits, not an attacker who recomputes it (such a writer could as well replace the
code).  Backends still recompute and compare what they can cheaply (the LLVM backend:
the parameter types of the ABI against the specialization's).
Writes go to a temporary file in the same directory followed by ``os.replace``, so
readers never see half a file and concurrent writers of the same key both succeed; the
object is named by its hash, so a manifest always refers to the bytes it was written with.
Processes that would build the same key at once can take turns instead
(:meth:`DiskCache.building`, an advisory ``flock`` on ``<key>.lock``, removed on
release): the first builds, the others wait and load its entry (ascend-sim libraries:
test workers sharing a cache built each library once per worker before).
Small facts without object code (the frontend's record of which arguments a function
specializes by value) are plain manifests: :meth:`DiskCache.load_data` /
:meth:`DiskCache.store_data`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 2
"""Bumped when the layout changes: entries of another format are foreign (rebuilt)."""


def default_root() -> Path:
    """The cache root directory from the environment (not created here)."""
    explicit = os.environ.get("PYASC_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pyasc"


@dataclass
class CacheEntry:
    """A validated cache entry."""

    manifest: dict[str, Any]
    obj: bytes


class DiskCache:
    """Object-code cache for one backend under ``root``."""

    def __init__(self, root: Path | None = None, backend: str = "cpu") -> None:
        self.dir = (root if root is not None else default_root()) / backend

    def _paths(self, key: str) -> tuple[Path, Path]:
        folder = self.dir / key[:2]
        return folder, folder / f"{key}.json"

    def load(self, key: str) -> CacheEntry | None:
        """The entry for ``key`` if present and intact, else ``None``."""
        folder, manifest_path = self._paths(key)
        try:
            manifest = json.loads(manifest_path.read_text())
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
                    or manifest.get("key") != key:
                return None
            name = str(manifest["object"])
            if "/" in name or os.sep in name:
                return None
            obj = (folder / name).read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not _sealed(manifest, obj) or len(obj) != manifest.get("object_size") or \
                hashlib.sha256(obj).hexdigest() != manifest.get("object_sha256"):
            return None
        return CacheEntry(manifest, obj)

    @contextmanager
    def building(self, key: str) -> Iterator[None]:
        """Hold the cross-process build lock of ``key`` (blocking while another process
        holds it): a builder checks :meth:`load` again inside, then builds and stores.
        The lock file is removed on release.  Without ``fcntl`` (Windows) or a writable
        folder it holds nothing."""
        folder, _ = self._paths(key)
        try:
            import fcntl

            folder.mkdir(parents=True, exist_ok=True)
            fd = _lock(folder / f"{key}.lock", fcntl)
        except (ImportError, OSError):
            yield
            return
        try:
            yield
        finally:
            # unlinked while still held: a waiter on this file then sees it is no
            # longer the path's file and retries on a fresh one (see _lock)
            with contextlib.suppress(OSError):
                os.unlink(folder / f"{key}.lock")
            os.close(fd)

    def load_data(self, key: str) -> dict[str, Any] | None:
        """The JSON data stored for ``key`` by :meth:`store_data`, if intact."""
        _, manifest_path = self._paths(key)
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or \
                manifest.get("key") != key or not isinstance(manifest.get("data"), dict) \
                or not _sealed(manifest, b""):
            return None
        return manifest["data"]

    def store_data(self, key: str, data: dict[str, Any]) -> Path | None:
        """Write JSON ``data`` for ``key`` atomically (``None`` on I/O errors)."""
        folder, manifest_path = self._paths(key)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _atomic_write(manifest_path, _sealed_json(
                {"format": FORMAT, "key": key, "data": data}, b""))
        except OSError:
            return None
        return manifest_path

    def store(self, key: str, manifest: dict[str, Any], obj: bytes) -> Path | None:
        """Write an entry atomically; returns the manifest path, or ``None`` on I/O errors
        (an unwritable cache only costs a recompilation)."""
        folder, manifest_path = self._paths(key)
        digest = hashlib.sha256(obj).hexdigest()
        obj_name = f"{key}-{digest[:16]}.o"
        full = dict(manifest, format=FORMAT, key=key, object=obj_name,
                    object_size=len(obj), object_sha256=digest)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _atomic_write(folder / obj_name, obj)
            _atomic_write(manifest_path, _sealed_json(full, obj))
        except OSError:
            return None
        return manifest_path


def _seal(fields: dict[str, Any], obj: bytes) -> str:
    """SHA-256 over the canonical JSON of ``fields`` and the object's bytes."""
    h = hashlib.sha256(json.dumps(fields, sort_keys=True).encode())
    h.update(b"\0")
    h.update(obj)
    return h.hexdigest()


def _sealed_json(manifest: dict[str, Any], obj: bytes) -> bytes:
    """The manifest's file contents, ``seal`` included.  Sealed as it will be read back
    (a JSON round trip turns tuples into lists), so a reader recomputes the same."""
    fields = json.loads(json.dumps(manifest, sort_keys=True))
    fields.pop("seal", None)
    return json.dumps(dict(fields, seal=_seal(fields, obj)), sort_keys=True).encode()


def _sealed(manifest: dict[str, Any], obj: bytes) -> bool:
    """Whether ``manifest`` (as read) carries the seal of its other fields and ``obj``."""
    fields = dict(manifest)
    claimed = fields.pop("seal", None)
    return isinstance(claimed, str) and claimed == _seal(fields, obj)


def _atomic_write(path: Path, data: bytes) -> None:
    import tempfile  # only writers need it (~10 ms to import)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@functools.cache
def package_digest() -> str:
    """A digest of pyasc's own source files (names, sizes, modification times): a cache
    key part that changes with the code, which the version number does not between
    development builds.  Stat-only, so a fresh process pays ~1 ms, not a full read."""
    root = str(Path(__file__).resolve().parent.parent)
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".lark")):
                path = os.path.join(dirpath, name)
                st = os.stat(path)
                h.update(f"{path[len(root):]}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def _lock(path: Path, fcntl: Any) -> int:
    """An open descriptor of ``path`` holding its exclusive ``flock`` (released by close,
    even if the holder dies).  The file a waiter opened may have been unlinked by the
    holder it waited for: then it is not the path's file any more, so try again."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
