"""Running a course: student copies (``student``), grading in the sandbox (``grader``), the local JupyterHub
(``hub``)."""
