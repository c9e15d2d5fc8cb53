"""llm_lab.dev.gpu_check (make test-gpu, tools/colab_nbval.ipynb): one clear line without a GPU; with one, nbval's
cells counted."""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from llm_lab.dev import gpu_check
from tools.authoring import nbtool

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_gpu_it_says_so_in_one_line_and_runs_nothing(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu_check, "run_nbval", lambda *a: pytest.fail("nbval ran without a GPU"))
    assert gpu_check.main([str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no CUDA GPU" in out


@pytest.mark.parametrize("module", ["llm_lab.dev.gpu_check", "llm_lab.gpu_check"])  # old name: Makefile, Colab
def test_python_dash_m_runs_main(module, tmp_path):
    # no GPU here: main() says so and exits 2; --help exits 0. Either way main() ran, with no runpy warning.
    proc = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    said = [line.split(": ", 1)[1] for line in proc.stderr.splitlines() if not line.startswith("  ")]
    new = "llm_lab.dev.gpu_check"  # the old name warns that it is deprecated (tests/repo/test_old_paths.py)
    warned = [] if module == new else [f"DeprecationWarning: {module} is deprecated and removed in 0.3.0: use {new}"]
    assert proc.returncode == 0 and said == warned, proc.stderr
    assert proc.stdout.startswith("usage: python -m llm_lab.dev.gpu_check")
    if not torch.cuda.is_available():
        proc = subprocess.run(
            [sys.executable, "-m", module, str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        said = [line.split(": ", 1)[1] for line in proc.stderr.splitlines() if not line.startswith("  ")]
        assert (proc.returncode, proc.stdout, said) == (2, gpu_check.NO_GPU + "\n", warned)


def test_needs_paths_or_fetch_but_not_both(capsys):
    with pytest.raises(SystemExit):
        gpu_check.main([])
    with pytest.raises(SystemExit):
        gpu_check.main(["notebooks", "--fetch", "a/b", "v1"])


def tiny_notebook(path: Path, stored: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    cells = [
        nbformat.v4.new_code_cell("print(6 * 7)", execution_count=1),
        nbformat.v4.new_code_cell("print('ok')", execution_count=2),
    ]
    cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored)]
    cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="ok\n")]
    nb.cells = cells
    nbformat.write(nb, str(path))


@pytest.mark.parametrize("stored, passed, failed", [("42\n", 2, 0), ("41\n", 1, 1)])
def test_with_a_gpu_it_counts_nbvals_cells(monkeypatch, capsys, tmp_path, stored, passed, failed):
    # the plumbing, checked on the CPU: pretend a GPU is there, run nbval on a two-cell notebook
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpu_check.torch.cuda, "get_device_name", lambda i=0: "Pretend GPU")
    tiny_notebook(tmp_path / "tiny.ipynb", stored)
    rc = gpu_check.main([str(tmp_path / "tiny.ipynb"), "--sanitize", str(ROOT / "tests" / "nbval_sanitize.cfg")])
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("gpu_check:"))
    assert f"{passed} cells passed" in line and "Pretend GPU" in line
    assert ("all passed" in line) == (failed == 0)
    assert (rc == 0) == (failed == 0)
    assert out.count("  failed:") == failed


def test_colab_notebook_is_current_and_reports_no_gpu_on_a_cpu():
    repo, ref = nbtool.colab_config()
    path = ROOT / nbtool.GPU_NOTEBOOK
    nb = nbformat.read(str(path), as_version=4)
    assert [c.source for c in nb.cells] == [c.source for c in nbtool.gpu_notebook(repo, ref).cells]
    assert nb.metadata.get("accelerator") == "GPU"
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[-1].outputs
    text = "".join(o.get("text", "") for o in outputs)
    assert [o.output_type for o in outputs] == ["stream"] and text.count("\n") == 1
    assert text.startswith("No GPU in this runtime")
