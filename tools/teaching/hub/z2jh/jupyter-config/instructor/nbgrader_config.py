# the instructor's nbgrader settings: the course folder lives in the instructor's own home volume
c = get_config()  # noqa: F821
c.CourseDirectory.root = "/home/jovyan/llm-lab"
