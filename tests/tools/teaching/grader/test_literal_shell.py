"""The graded kernel runs a line as the Python the grader reads it as (tools/teaching/grader/sandbox.py,
``LITERAL_SHELL``): IPython's prefilter would run ``run / tmp / x.py`` (division to the grader's reading) as
``%run``, ``ls`` as a shell alias; the fifth red team wrote a file from a hex string and ran it that way, unread.
Here a kernel started with the grader's own command (unsandboxed, so it starts fast) keeps such lines Python, a
Macro's name included."""

from __future__ import annotations

import json

import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from tools.teaching.grader import sandbox


def _outputs(argv: list[str], lines: list[str], specs) -> list[str]:
    (specs / "graded").mkdir(parents=True)
    (specs / "graded" / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python", "display_name": "g"}))
    km = KernelManager(kernel_name="graded", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]))
    km.start_kernel()
    said: list[str] = []
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(120)
        for line in lines:
            out: list[str] = []
            kc.execute_interactive(
                line,
                timeout=60,
                output_hook=lambda m, out=out: out.append(
                    m["content"].get("ename")
                    or m["content"].get("text")
                    or m["content"].get("data", {}).get("text/plain", "")
                ),
            )
            said.append("".join(out).strip())
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    return said


@pytest.mark.parametrize("literal", [True, False], ids=["graded kernel", "control: IPython's defaults"])
def test_a_line_that_reads_as_python_runs_as_python(tmp_path, literal):
    argv = sandbox.kernel_argv(sandboxed=False)
    if not literal:
        argv = [a for a in argv if a not in sandbox.LITERAL_SHELL]
    script = tmp_path / "x.py"
    script.write_text("print('ran unread')\n")
    macro = "from IPython.core.macro import Macro\nm = Macro('print(6 * 7)')"
    lines = [f"import os\nos.chdir({str(tmp_path)!r})", "run / x.py", "pwd", "ls", macro, "m"]
    said = _outputs(argv, lines, tmp_path / "k")
    if literal:
        assert said[1:4] == ["NameError"] * 3 and said[5] != "42", said
    else:  # the prefilter's automagic (%run tried, %pwd ran), alias (the shell listed the folder) and macro (ran)
        assert said[1] != "NameError" and str(tmp_path) in said[2] and "x.py" in said[3] and said[5] == "42", said
