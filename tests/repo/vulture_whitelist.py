"""Names vulture (tests/repo/test_dead_code.py) cannot see used: each is read by a library, a framework or the
interpreter, never by our own code. A line here is a use; add one only with the reason beside it."""

# ruff: noqa: B018
from types import SimpleNamespace

_ = SimpleNamespace()

# the interpreter and the import system
_.f_trace  # a frame's trace function (_deadline sets it; Python calls it)
_.submodule_search_locations  # a package's spec (autograde_guard builds one)

# torch, IPython, Jupyter, nbconvert, nbgrader, fontTools, JupyterHub: hooks and settings they read
_._should_skip_dynamo  # torch's TorchFunctionMode asks it (_observe)
_._ipython_display_  # IPython displays an explorer through it
_.display_size  # ipywidgets layout traits the explorers set
_.render_count
_.preprocess_cell  # nbconvert calls it (tools/teaching/student.py)
_.enforce_metadata  # nbgrader's ClearSolutions setting
_.execution_count  # nbformat cells
_.auto_score  # nbgrader's gradebook fields (tools/teaching/grader/nbgrader_course.py)
_.auto_comment
_._context_default  # traitlets/jupyter_client hooks (tools/teaching/grader/kernel.py)
_._created_context
_.handle_comm_msg
_._update_display_id
_.client_factory
_.clear_before_next_output  # nbclient's state, reset by the grader's tests as nbclient does
_.W  # a layer the memory test builds on the meta device (never read: its size is the point)
_.glyphOrder  # fontTools tables and subsetter options (tools/authoring/figure_font.py)
_.glyphDataFormat
_.tableVersion
_.maxZones
_.formatType
_.sfntVersion
_.layout_features
_.hinting
_.notdef_outline
_.name_IDs
_.name_languages
_.recalcTimestamp
_.authenticate  # JupyterHub's authenticator and configuration (tools/teaching/hub/jupyterhub_config.py)
_.ip
_.hub_ip
_.hub_port
_.api_url
_.pid_file
_.cookie_secret_file
_.cleanup_servers
_.cleanup_proxy
_.authenticator_class
_.allowed_users
_.admin_users
_.services
_.load_roles
_.spawner_class
_.default_url
_.notebook_dir
_.start_timeout
_.http_timeout
_.mem_limit
_.pre_spawn_hook
_.last_activity_interval  # the hub reports activity to the idle culler this often
_.service_token  # the hub's API token, read by JupyterHub's service through the config
_.log_message  # http.server calls it (tests/e2e/e2e_site.py silences it)
_.on_cell_executed  # nbclient calls it after each cell (grader/kernel.py: a reply asking the kernel to exit)

# llm_lab.exercises' documented API (its docstring lists them) for an instructor's own scripts; exported only
_.HINTS
_.STATUSES
