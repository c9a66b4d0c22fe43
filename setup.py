"""Packaging hook: ``examples/`` ships inside the wheel as ``pyasc.examples`` (and its
``training/`` folder, which ``pyasc demo`` also runs).

``pyasc demo`` runs the example operators; from an installed wheel (not a checkout) it
finds them there.  Everything else about the package is in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["pyasc*"]), "pyasc.examples", "pyasc.examples.training"],
    package_dir={"pyasc.examples": "examples", "pyasc.examples.training": "examples/training"},
)
