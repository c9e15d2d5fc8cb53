"""The grader: ``make grade`` (``python -m tools.teaching.grader``) and ``make grade-nbgrader`` (``nbgrader_course``).

One submission's round trip; each box is a process, the arrows are what crosses between them::

    instructor ── SUBMISSIONS folder (or nbgrader's submitted/) ──▶ grader: this package, the instructor's process
      │  submissions: finds and reads each file safely        matching: its course notebook, the notebook to run
      │  source_checks, source_names, source_tampering, source_looks: reads every cell's source (never run)
      │
      │  cells: the notebook up to each checker cell, a capture cell in its place, then one cell per request
      ▼
    sandboxed kernel (sandbox, sandbox_limits: bubblewrap, no network, its own processes, read-only llm_lab)
      │  runs the learner's code; llm_lab.exercises.grading.answering answers each request with DATA:
      │  what the learner's function returned, as JSON with tensors as raw bytes (llm_lab.exercises.grading.wire)
      ▼
    checker, back in the grader (judging): llm_lab.exercises.grade on a proxy of the learner's object
      │  (llm_lab.exercises.grading.proxies), inputs drawn from this run's secret seed: the verdict
      ▼
    gradebook (report: grades.csv, feedback/<student>.html, report.md; nbgrader_course: nbgrader's gradebook.db
    and autograded/)

The parts: ``cli`` (the command: grade a folder, in parallel), ``submissions`` (what was handed in, read without
trusting it; the ``Submission`` record), ``reading`` (every step that reads a submission, in a bounded process of
its own), ``matching`` (which course notebook, and the ``ExecutionPlan``),
``kernel`` (one submission's kernel and the round trip to it), ``judging`` (each exercise's ``Verdict``),
``source_checks``, ``source_names``, ``source_tampering`` and ``source_looks`` (what the source decides before
any kernel is asked), ``report`` (what is
written, escaped), ``sandbox`` and ``sandbox_limits`` (where the kernel runs), ``nbgrader_course`` (the same
grading for an nbgrader course, into its gradebook).

What the learner's kernel says is data, never a verdict: the checkers, the reference and the comparison run only
here. Plain ``nbgrader autograde`` works differently (its hidden tests run inside the learner's kernel, guarded
only by ``llm_lab.exercises.grading.autograde_guard``); docs/instructors.md says what each one trusts.
"""
