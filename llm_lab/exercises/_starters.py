"""The starters of threads and processes that every check rules out, offered as ``_harness.STARTERS`` and
``_harness.PY_STARTERS``."""

# What starts a thread or a process: ruled out in every check, since the watch (and the observation of the ops
# a call runs) covers the calling thread only; ``threading.Thread.start`` and ``concurrent.futures`` end in the
# first two, ``multiprocessing`` and ``subprocess`` in the others. Kept apart from the exercise records (and read
# through ``_harness``) so that the kernel's answering side watches them without the checkers' records.
STARTERS = tuple(
    (module, attr, "thread_started")
    for module, attr in (
        ("_thread", "start_new_thread"),
        ("_thread", "start_joinable_thread"),
        ("_thread", "start_new"),
        ("os", "fork"),
        ("os", "forkpty"),
        ("os", "posix_spawn"),
        ("os", "posix_spawnp"),
        ("os", "system"),
        ("_posixsubprocess", "fork_exec"),
    )
)
# The Python functions those are reached through: a call observed by the observer is watched by a trace hook that
# sees Python calls only (cheaper than the profile hook, which also sees every builtin call), so the builtins above
# are caught there through these.
PY_STARTERS = (
    ("threading", "Thread.start"),
    ("multiprocessing.process", "BaseProcess.start"),
    ("subprocess", "Popen.__init__"),
)
