"""Pass registry, default pipeline, verification after each pass, PYASC_DUMP_IR."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyasc.errors import InternalCompilerError, InvalidEnvironmentWarning
from pyasc.ir import parse_module
from pyasc.ir.dumps import content_key
from pyasc.ir.ops import arith
from pyasc.ir.passes import (
    DEFAULT_PIPELINE,
    PASS_REGISTRY,
    Pass,
    PassContext,
    PassManager,
    get_pass,
    manager,
    run_pipeline,
)

MODULE = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: i32):
    %z = "arith.constant"() {value = 0} : () -> i32
    %a = "arith.add"(%x, %z) : (i32, i32) -> i32
    %b = "arith.mul"(%a, %a) : (i32, i32) -> i32
    %c = "arith.mul"(%x, %x) : (i32, i32) -> i32
    %d = "arith.sub"(%b, %c) : (i32, i32) -> i32
    "func.return"(%d) : (i32) -> ()
  }) {function_type = (i32) -> i32, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_default_pipeline_is_registered() -> None:
    assert DEFAULT_PIPELINE == ["canonicalize", "cse", "forward-writes", "hoist-checks", "dce",
                                "fusion"]
    for name in DEFAULT_PIPELINE:
        assert get_pass(name).name == name
    with pytest.raises(KeyError, match="unknown pass 'nope'"):
        get_pass("nope")


def test_run_pipeline_runs_every_pass() -> None:
    module = parse_module(MODULE)
    assert run_pipeline(module) is module
    text = str(module)
    assert text.count('"arith.mul"') == 1  # x + 0 -> x, then the two x*x merge
    assert '"arith.sub"(%b, %b)' in text
    run_pipeline(module, ["canonicalize"])
    assert '"arith.mul"' not in str(module)  # b - b -> 0 and the mul is dead


def test_dump_ir_after_each_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYASC_DUMP_IR", str(tmp_path / "dumps"))
    module = parse_module(MODULE)
    key = content_key(str(module))
    run_pipeline(module)
    folder = tmp_path / "dumps" / f"f-{key[:16]}" / "passes"  # named by function + input
    assert [p.name for p in (tmp_path / "dumps").iterdir()] == [folder.parent.name]
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["00-input.ir", "01-canonicalize.ir", "02-cse.ir", "03-forward-writes.ir",
                     "04-hoist-checks.ir", "05-dce.ir", "06-fusion.ir"]
    dumps = [(folder / n).read_text() for n in names]
    assert parse_module(dumps[0]) is not None and '"arith.add"' in dumps[0]
    assert '"arith.add"' not in dumps[1]
    assert dumps[-1].strip() == str(module)


def test_no_dump_without_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYASC_DUMP_IR", raising=False)
    monkeypatch.chdir(tmp_path)
    run_pipeline(parse_module(MODULE))
    assert list(tmp_path.iterdir()) == []


class _BreakIR(Pass):
    """Makes the return use a value defined after it, past the terminator."""

    name = "test-break-ir"

    def run(self, module, ctx: PassContext) -> None:
        fn = next(module.functions)
        ret = fn.entry.terminator
        late = arith.ConstantOp.new(1, ret.operand_values[0].type)
        fn.entry.append(late)
        ret.set_operand(0, late.result)


def test_ir_is_verified_after_each_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PASS_REGISTRY, _BreakIR.name, _BreakIR)
    monkeypatch.setenv("PYASC_VERIFY_IR", "each")
    with pytest.raises(InternalCompilerError, match="after pass 'test-break-ir'"):
        PassManager(["test-break-ir", "canonicalize"]).run(parse_module(MODULE))


def test_by_default_the_pipeline_result_is_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PYASC_VERIFY_IR the verifier runs once, after the last pass; the error
    names the passes and how to find the one that broke the IR."""
    monkeypatch.setitem(PASS_REGISTRY, _BreakIR.name, _BreakIR)
    monkeypatch.delenv("PYASC_VERIFY_IR", raising=False)
    calls: list[object] = []
    real = manager.verify_module
    monkeypatch.setattr(manager, "verify_module", lambda m: (calls.append(m), real(m)))
    PassManager(["canonicalize", "cse", "dce"]).run(parse_module(MODULE))
    assert len(calls) == 1
    with pytest.raises(InternalCompilerError,
                       match=r"after the passes test-break-ir, canonicalize .*PYASC_VERIFY_IR=each"):
        PassManager(["test-break-ir", "canonicalize"]).run(parse_module(MODULE))


def test_bad_verify_setting_warns_and_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYASC_VERIFY_IR", "sometimes")
    with pytest.warns(InvalidEnvironmentWarning, match="PYASC_VERIFY_IR"):
        assert manager.verify_each_pass() is False


def test_options_reach_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict] = []

    class Probe(Pass):
        name = "test-probe"

        def run(self, module, ctx: PassContext) -> None:
            seen.append(ctx.options)

    monkeypatch.setitem(PASS_REGISTRY, Probe.name, Probe)
    run_pipeline(parse_module(MODULE), ["test-probe"], options={"fastmath": True})
    assert seen == [{"fastmath": True}]
