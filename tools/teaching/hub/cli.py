"""``python -m tools.teaching.hub.cli start|setup|stop|remove`` (``make hub``): the options, and the hub run until
Ctrl-C. What each command does: tools/teaching/hub/hub.py."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from tools import course as _course
from tools.teaching.hub import hub as hubmod
from tools.teaching.hub.hub import DEFAULT_CULL, DEFAULT_DIR, DEFAULT_LIMITS, Hub, log


def parse(argv=None) -> tuple[str, Hub]:
    """The command and the hub its options describe."""
    ap = argparse.ArgumentParser(description=hubmod.__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("start", "setup", "stop", "remove"))
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"the hub's folder (default {DEFAULT_DIR})")
    ap.add_argument("--port", type=int, default=8765, help="the hub's port on 127.0.0.1 (also uses PORT+1, +2)")
    ap.add_argument("--students", type=int, default=3, help="student accounts llm-student1..N (default 3)")
    ap.add_argument("--names", help="comma-separated student names instead of --students")
    ap.add_argument("--instructor", default="llm-instructor")
    ap.add_argument("--notebook", default="01", help="the course notebook made into an assignment (default 01)")
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python of the learners' environment")
    ap.add_argument("--mem-limit", default=DEFAULT_LIMITS["mem_limit"], help="memory per learner (default %(default)s)")
    ap.add_argument("--cpu-limit", type=float, default=DEFAULT_LIMITS["cpu_limit"], help="cores per learner")
    ap.add_argument("--pids-limit", type=int, default=DEFAULT_LIMITS["pids_limit"], help="processes per learner")
    ap.add_argument("--no-limits", action="store_true", help="no cgroup per learner (LocalProcessSpawner as is)")
    ap.add_argument(
        "--cull-timeout",
        type=int,
        default=DEFAULT_CULL["timeout"],
        help="seconds idle before the idle culler stops a server (default %(default)s; 0: no culler)",
    )
    args = ap.parse_args(argv)
    names = args.names.split(",") if args.names else [f"llm-student{i}" for i in range(1, args.students + 1)]
    limits = (
        {}
        if args.no_limits
        else {"mem_limit": args.mem_limit, "cpu_limit": args.cpu_limit, "pids_limit": args.pids_limit}
    )
    cull = {
        **DEFAULT_CULL,
        "timeout": args.cull_timeout,
        "every": min(DEFAULT_CULL["every"], max(args.cull_timeout // 2, 1)),
    }
    hub = Hub(
        args.dir,
        args.port,
        args.instructor,
        names,
        args.python,
        notebook=args.notebook,
        limits=limits,
        cull=cull if args.cull_timeout > 0 else {},
    )
    return args.command, hub


def main(argv=None) -> int:
    command, hub = parse(argv)
    if command == "stop":
        hub.stop()
        return 0
    if command == "remove":
        hub.remove()
        return 0
    hub.setup()
    if command == "setup":
        return 0
    serve(hub)
    return 0


def serve(hub: Hub) -> None:
    """Start the hub, print its accounts, run until Ctrl-C or SIGTERM (or the hub ends), stop it."""
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    hub.start()
    log(f"JupyterHub at {hub.url}/ (127.0.0.1 only); accounts and passwords (also in {hub.state}/passwords.json):")
    for user, password in hub.passwords.items():
        log(f"  {user:<20} {password}")
    log(f"instructor: {hub.instructor} (formgrader; the course folder {hub.course})")
    log(
        f"students: {', '.join(hub.students)} (Assignments tab); release with: runuser -u {hub.instructor} -- "
        f"... or the instructor's formgrader"
    )
    generated = ", ".join(f"{a}-{lang}" for a in hub.assignments.values() for lang in _course.LANGS)
    log(f"assignments generated: {generated}; Ctrl-C stops the hub and every server")
    if hub.limits:
        log(
            f"per learner (a cgroup each): memory {hub.limits['mem_limit']}, {hub.limits['cpu_limit']} core(s), "
            f"{hub.limits['pids_limit']} processes"
        )
    if hub.cull:
        log(f"idle servers stopped after {hub.cull['timeout']} s (jupyterhub-idle-culler)")
    try:
        while not stop["now"] and hub.proc.poll() is None:
            time.sleep(0.5)
    finally:
        log("stopping")
        hub.stop()


if __name__ == "__main__":
    sys.exit(main())
