"""The maintainers' and instructors' tools, by audience; run from the repository root as ``python -m tools....``
(the Makefile's targets do).

- ``tools.course``: the course model every tool shares: paths, languages, the two stored versions, ``select(NB)``,
  cell tags and the nbgrader rule.
- ``tools.authoring``: writing the series: the notebook builder (``nbtool``), the learner versions, the site, the
  tiny model's training.
- ``tools.teaching``: running a course: student copies, the grader (``tools.teaching.grader``: the sandbox, the
  kernel, the judging, the report, nbgrader courses), the local JupyterHub.
- ``tools.release``: what users get: releases, the installed-wheel nbval run and its float nudge.
- ``tools.envs``: every virtual environment the targets use (the main ``.venv``, ipywidgets 7, the wheel, the site,
  other torch versions, the hub's learners), made and kept current one way, with one stamp.
"""
