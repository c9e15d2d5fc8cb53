"""For maintainers and bug reports: the environment block (``python -m llm_lab.dev.env``) and nbval on a GPU (``python -m llm_lab.dev.gpu_check``)."""  # noqa: E501
