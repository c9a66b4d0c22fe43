"""The AscendCL runtime tests share one kernel cache (ascend-sim builds, the objects of
``PYASC_ASCEND_OBJECTS=ascend-sim``) and build at -O0: each build costs seconds."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def _acl_cache(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("acl-cache")


@pytest.fixture(autouse=True)
def _shared_cache(_acl_cache, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(_acl_cache))
    monkeypatch.setenv("PYASC_SIM_OPT", "-O0")
