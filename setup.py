"""Packaging hook: ``examples/`` ships inside the wheel as ``pyasc.examples``.

``pyasc demo`` runs the example operators; from an installed wheel (not a checkout) it
finds them there.  Everything else about the package is in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["pyasc*"]), "pyasc.examples"],
    package_dir={"pyasc.examples": "examples"},
)
