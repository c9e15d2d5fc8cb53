"""The learner's checkers are plain functions in llm_lab/exercises/checkers.py, generated from the records and kept
in step with them; an IDE sees them (no names made at import time)."""

import ast
import inspect
from pathlib import Path

from llm_lab import exercises as ex
from tools.authoring import checker_defs

ROOT = Path(__file__).resolve().parents[3]


def test_the_checkers_file_is_what_the_records_generate():
    assert checker_defs.main(["--check"]) == 0, "run: python -m tools.authoring.checker_defs"


def test_every_exercise_has_a_checker_defined_in_the_file_with_its_signature_as_docstring():
    tree = ast.parse((ROOT / "llm_lab" / "exercises" / "checkers.py").read_text(encoding="utf-8"))
    defined = {node.name: ast.get_docstring(node) for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert set(defined) == {f"check_{name}" for name in ex.EXERCISES}
    for name in ex.EXERCISES:
        fn = getattr(ex, f"check_{name}")
        assert inspect.getsourcefile(fn).endswith("checkers.py")  # a def in the file, not a function made at import
        assert ex.REGISTRY[name].signature.split()[0] in defined[f"check_{name}"]
        assert f"check_{name}" in ex.__all__


def test_a_stale_file_is_reported(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "checkers.py"
    stale.write_text(checker_defs.render().replace("check_causal_mask", "check_old_name"), encoding="utf-8")
    monkeypatch.setattr(checker_defs, "TARGET", stale)
    assert checker_defs.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
