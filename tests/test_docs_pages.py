"""The documentation holds: every relative link (README, docs/, benchmarks/RESULTS.md)
points at a file that exists and, with an ``#anchor``, at a heading in it; every code
block marked runnable runs.

A runnable block is a fenced ``python`` block preceded by the line ``<!-- runnable -->``
(invisible on GitHub).  The runnable blocks of one page run in order as one script, so a
later block may use what an earlier one defined, as a reader would type them; the script
is a file (``@hybrid`` reads its source) run in a fresh interpreter with its own cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md",
                *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
RUNNABLE = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page`` (repeated headings get GitHub's -1, -2...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    """The links of ``page`` outside code blocks that are not URLs."""
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_checker_finds_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Top `x`\n[a](p.md#top-x) [b](missing.md) [c](p.md#nope) "
                    "[u](https://x.org) `[d](ignored.md)`\n```\n[e](ignored.md)\n```\n")
    assert relative_links(page) == ["p.md#top-x", "missing.md", "p.md#nope"]
    assert anchors(page) == {"top-x"}


RUNNABLE_PAGES = [p for p in PAGES if RUNNABLE.search(p.read_text())]


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_runnable_blocks_run(page, tmp_path):
    blocks = RUNNABLE.findall(page.read_text())
    if any("import torch" in b for b in blocks):  # docs/torch.md: the optional extra
        pytest.importorskip("torch")
    script = tmp_path / f"doc_{page.stem.replace('-', '_')}.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "PYASC_CACHE_DIR": str(tmp_path / "cache"), "PYASC_TARGET": "",
           "PYTHONPATH": str(ROOT)}
    env.pop("PYASC_TARGET")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{page.name}'s runnable blocks failed:\n{run.stderr[-3000:]}"


def test_the_docs_have_runnable_blocks():
    # the user guide pages show code that runs; a marker typo would skip them silently
    names = {p.name for p in RUNNABLE_PAGES}
    assert {"getting-started.md", "programming-model.md", "performance.md", "torch.md"} <= names
