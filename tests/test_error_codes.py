"""The error classes, their rendering, and the table in docs/errors.md agree."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from pyasc import errors

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"


def doc_rows() -> dict[str, str]:
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| (E5\d{4}) \| (\w+) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_doc_table_matches_classes():
    classes = {cls.code: cls.__name__ for cls in errors.ALL_ERRORS}
    assert doc_rows() == classes


def doc_warning_rows() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| (W5\d{4}) \| (\w+) \|",
                                                         DOC.read_text(), re.M)}


def test_doc_warning_table_matches_classes():
    classes = {cls.code: cls.__name__ for cls in errors.ALL_WARNINGS}
    assert doc_warning_rows() == classes
    assert len(set(classes)) == len(errors.ALL_WARNINGS)
    assert all(issubclass(cls, errors.PyascWarning) and issubclass(cls, UserWarning)
               for cls in errors.ALL_WARNINGS)


@pytest.mark.parametrize("cls", errors.ALL_WARNINGS)
def test_every_warning_renders_code_and_hint(cls):
    with pytest.warns(cls) as record:
        warnings.warn(cls("message", hint="do this"), stacklevel=1)
    text = str(record[0].message)
    assert text.startswith(f"{cls.code}: message") and text.endswith("= hint: do this")
    assert record[0].message.code == cls.code


def test_codes_are_unique_and_subclass_base():
    codes = [cls.code for cls in errors.ALL_ERRORS]
    assert len(codes) == len(set(codes))
    assert all(issubclass(cls, errors.PyascError) for cls in errors.ALL_ERRORS)
    assert {"E50001", "E50002", "E50003"} <= set(codes)


def test_render_has_location_source_line_caret_and_hint(tmp_path):
    src = tmp_path / "op.py"
    src.write_text("def f(x):\n    return x + mask\n")
    err = errors.TypeMismatchError("cannot combine float32 and bool", filename=str(src),
                                   lineno=2, col_offset=11, end_col_offset=19)
    text = str(err)
    assert text.splitlines()[0] == "E50001: type mismatch: cannot combine float32 and bool"
    assert f"--> {src}:2:12" in text
    assert "2 |     return x + mask" in text
    caret_line = [ln for ln in text.splitlines() if "^" in ln][0]
    assert caret_line.index("^") == text.splitlines()[3].index("x + mask")
    assert caret_line.count("^") == 8
    assert "hint: " in text and err.code == "E50001"


def test_with_location_only_fills_missing():
    err = errors.ShapeInferenceError("bad")
    err.with_location("a.py", 3, 4, source_line="    y = a @ b")
    assert (err.filename, err.lineno, err.col_offset) == ("a.py", 3, 4)
    err.with_location("b.py", 9, 9)
    assert err.filename == "a.py"
    assert "a.py:3:5" in str(err)


@pytest.mark.parametrize("cls", errors.ALL_ERRORS)
def test_every_error_is_raisable_and_catchable(cls):
    with pytest.raises(errors.PyascError) as info:
        raise cls("message", hint="do this")
    assert info.value.code == cls.code and "do this" in str(info.value)
