"""Keep the CPU backend tests away from the user's kernel cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))
