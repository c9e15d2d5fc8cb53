"""Running a course: student copies, grading in the sandbox, nbgrader courses, the local JupyterHub (hub/)."""
