"""The course on a local JupyterHub: ``make hub`` (or ``python -m tools.teaching.hub.cli start``).

What ``start`` sets up, then runs until Ctrl-C (or ``hub.py stop``, or SIGTERM), all under ``--dir``
(default ``/srv/llm-lab-hub``):

- **the learners' environment** ``DIR/venv``: a venv made with a Python every Unix user can run
  (``--python``, default ``/usr/bin/python3``), holding requirements-hub.txt's pins (the learner's packages,
  nbgrader, jupyterhub for ``jupyterhub-singleuser``) and llm_lab from the wheel built from this tree (not the
  checkout: single-user servers never import from it). Rebuilt only when the requirements or the wheel change.
- **real Unix users** (``useradd -m``): one instructor (``--instructor``, default ``llm-instructor``) and the
  students (``--students N`` gives ``llm-student1``..N, or ``--names a,b``). nbgrader's exchange relies on Unix
  permissions, so every hub user is a Unix user. The hub logs them in with a test authenticator,
  ``DemoPasswords`` (tools/teaching/hub/jupyterhub_config.py: a random password per account, printed at start and kept
  in ``DIR/state/passwords.json``, root only): a local demo. A real course uses its institution's
  authenticator (docs/hub.md).
- **nbgrader's exchange** ``DIR/exchange`` (mode 1777, one course ``llm-lab``) and the config every user's
  server reads (``DIR/config/common/nbgrader_config.py``: course id, exchange root).
- **the course folder** ``~instructor/llm-lab`` (mode 0700, the instructor's): ``nbgrader_config.py``, the
  instructor notebooks graded against (``instructor-notebooks/<lang>/``), ``source/<name>-<lang>`` for every
  language of ``tools.course.LANGS``, made from a course notebook (``--notebook 01``), generated (``nbgrader
  generate_assignment``) as the instructor, ready to release.
- **who sees what**: learners' servers read ``DIR/config/learner`` first (formgrader, course list and
  create-assignment off, server side and in JupyterLab; the assignment list and Validate on); the instructor's
  read ``DIR/config/instructor`` (formgrader on, pointed at the course folder).
- **JupyterHub** (``.venv``'s, run as root so it can start servers as the users) on ``127.0.0.1:PORT``, its
  proxy (configurable-http-proxy from the npm registry, ``--proxy``) on PORT+2, the hub API on PORT+1. Its
  PID is written to ``DIR/state/jupyterhub.pid``; stopping sends SIGTERM to that PID only (JupyterHub then stops
  the proxy and every single-user server it started) and waits for it (tools/teaching/hub/process.py).

``remove`` stops the hub, deletes the users this tool created (``DIR/state/users.json``) with their homes, and
``DIR``. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from tools import course as _course
from tools import envs
from tools.teaching.hub import process

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

DEFAULT_DIR = Path("/srv/llm-lab-hub")
COURSE_ID = "llm-lab"
# The language whose stubs the course's nbgrader_config.py holds; the other languages' go on the command line.
CONFIG_LANG = _course.LANGS[0]
PROXY = ROOT / "build" / "hub" / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
# Per learner (tools/teaching/hub/limits.py; the same in the Z2JH values): memory of all their processes together,
# cores' worth of CPU, processes and threads. docs/hub-sizing.md says where the figures come from.
DEFAULT_LIMITS = {"mem_limit": "2G", "cpu_limit": 1.0, "pids_limit": 512}
# jupyterhub-idle-culler: a server idle this many seconds is stopped, checked every `every` seconds (Z2JH's defaults)
DEFAULT_CULL = {"timeout": 3600, "every": 600, "activity_interval": 300}
LEARNER_PAGE_CONFIG = {
    "disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True,
        "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True,
    }
}
# The kernels of the learners' servers talk to their server over Unix sockets in the learner's runtime folder
# (``ipc``), not TCP ports on 127.0.0.1: a server picks its kernel's five ports free, then the kernel binds them
# seconds later; with a class starting kernels at once one of those ports could be taken meanwhile, and that kernel
# hung ("Address already in use") and never answered (docs/hub-sizing.md). The server's kernels only (the
# AsyncIOLoopKernelManager that jupyter_server starts them with), not nbgrader's Validate.
LEARNER_SERVER_CONFIG = {
    "ServerApp": {
        "jpserver_extensions": {
            "nbgrader.server_extensions.formgrader": False,
            "nbgrader.server_extensions.course_list": False,
            "nbgrader.server_extensions.assignment_list": True,
            "nbgrader.server_extensions.validate_assignment": True,
        }
    },
    "AsyncIOLoopKernelManager": {"transport": "ipc"},
}


def log(msg: str) -> None:
    print(f"hub: {msg}", flush=True)


def run(cmd, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("check", True)
    kw.setdefault("timeout", 1800)
    return subprocess.run([str(c) for c in cmd], **kw)


def stub_args(lang: str) -> list[str]:
    """nbgrader's command-line options for the stubs of ``lang``'s notebooks (none for ``CONFIG_LANG``: the
    course's nbgrader_config.py has them)."""
    from tools.teaching import student

    if lang == CONFIG_LANG:
        return []
    c = student.nbgrader_config(lang).ClearSolutions
    return [f"--ClearSolutions.code_stub=python={c.code_stub['python']}", f"--ClearSolutions.text_stub={c.text_stub}"]


def unreachable(directory: Path) -> str | None:
    """Why the hub's users could not reach ``directory`` (their venv, config and exchange live in it), or None:
    every folder above it must let others in (a checkout in a private folder, mode 0700, does not)."""
    for parent in Path(directory).resolve().parents:
        if parent.exists() and not parent.stat().st_mode & 0o001:
            return (
                f"hub: --dir {directory} is inside {parent} (mode {parent.stat().st_mode & 0o777:o}), which the "
                "hub's users cannot enter, so they could not run its venv: put the hub where they can reach "
                f"it (default {DEFAULT_DIR}), not inside a private checkout or home"
            )
    return None


class Hub:
    def __init__(
        self,
        directory: Path = DEFAULT_DIR,
        port: int = 8765,
        instructor: str = "llm-instructor",
        students: list[str] | None = None,
        python: str = "/usr/bin/python3",
        proxy: Path = PROXY,
        notebook: str = "01",
        instructor_dir: Path = ROOT / "notebooks" / "instructor",
        assignment: str | None = None,
        limits: dict | None = None,
        cull: dict | None = None,
        start_timeout: int = 120,
    ):
        self.dir = Path(directory).resolve()
        self.port = port
        self.instructor = instructor
        self.students = list(students or [f"llm-student{i}" for i in (1, 2, 3)])
        self.python = python
        self.proxy = Path(proxy)
        self.notebook = notebook
        self.instructor_dir = Path(instructor_dir)  # where its instructor versions are, one folder per language
        # one assignment per course notebook (``notebook`` may be "01,08"): ps<NN>, or ``assignment`` for one
        nbs = [n.strip() for n in str(notebook).split(",") if n.strip()]
        if not nbs or (assignment and len(nbs) > 1):
            raise ValueError(
                f"--notebook is one course notebook (01) or several (01,08) without --assignment: {notebook!r}"
            )
        self.assignments = {nb: assignment or f"ps{nb}" for nb in nbs}
        self.assignment = self.assignments[nbs[0]]
        self.limits = DEFAULT_LIMITS if limits is None else limits
        self.cull = DEFAULT_CULL if cull is None else cull
        self.start_timeout = start_timeout
        self.venv = self.dir / "venv"
        self.state = self.dir / "state"
        self.exchange = self.dir / "exchange"
        self.config = self.dir / "config"
        self.proc: subprocess.Popen | None = None

    # ---- paths ---------------------------------------------------------------------------------------
    @property
    def users(self) -> list[str]:
        return [self.instructor, *self.students]

    @property
    def course(self) -> Path:
        return Path(pwd.getpwnam(self.instructor).pw_dir) / COURSE_ID

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def config_path(self, user: str) -> str:
        role = "instructor" if user == self.instructor else "learner"
        return f"{self.config / role}:{self.config / 'common'}"

    def user_env(self, user: str) -> dict[str, str]:
        """The environment of ``user``'s single-user server (and of commands run as that user)."""
        home = str(self.home(user))
        return {
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "USER": user,
            "LOGNAME": user,
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "JUPYTER_CONFIG_PATH": self.config_path(user),
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def as_user(
        self,
        user: str,
        *cmd,
        cwd: Path | None = None,
        check: bool = True,
        timeout: float = 900,
    ) -> subprocess.CompletedProcess:
        """Run ``cmd`` as the Unix user ``user`` (runuser), with their server's environment."""
        env = self.user_env(user)
        argv = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *map(str, cmd)]
        proc = subprocess.run(argv, cwd=str(cwd or self.home(user)), capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"as {user}: {' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return proc

    def nbgrader(self, user: str, *args, **kw) -> subprocess.CompletedProcess:
        return self.as_user(user, self.venv / "bin" / "nbgrader", *args, **kw)

    # ---- setup ---------------------------------------------------------------------------------------
    def setup(self) -> None:
        if os.geteuid() != 0:
            raise SystemExit("hub: needs root (it creates Unix users and starts servers as them): sudo make hub")
        problem = unreachable(self.dir)
        if problem:
            raise SystemExit(problem)
        for d, mode in ((self.dir, 0o755), (self.state, 0o700), (self.config, 0o755)):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(mode)
        self.build_venv()
        self.create_users()
        self.write_config()
        self.make_exchange()
        self.make_course()

    def build_venv(self) -> None:
        """DIR/venv from the pinned requirements and this tree's wheel; skipped when nothing changed."""
        dist, tree = self.dir / "dist", self.dir / "tree"
        shutil.rmtree(dist, ignore_errors=True)
        shutil.rmtree(tree, ignore_errors=True)
        # built from a copy: the checkout's build/ is shared with other builds (make test-wheel)
        tree.mkdir()
        for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
            shutil.copyfile(ROOT / name, tree / name)
        for name in ("llm_lab", "data"):
            shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, tree],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(tree)
        wheel = next(dist.glob("llm_lab_course-*.whl"))
        env = envs.Env(
            "learners",
            str(self.venv),
            ("requirements-hub.txt",),
            editable=False,
            python=self.python,
            purpose="the learners' servers on the hub: requirements-hub.txt and this tree's wheel",
        )
        envs.ensure(env, wheel=wheel)

    def create_users(self) -> None:
        made_file = self.state / "users.json"
        made = set(json.loads(made_file.read_text())) if made_file.is_file() else set()
        for user in self.users:
            try:
                pwd.getpwnam(user)
            except KeyError:
                run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", user])
                made.add(user)
            self.home(user).chmod(0o700)  # no student reads another's files (useradd's default may be 0755)
        made_file.write_text(json.dumps(sorted(made)))
        pw = self.state / "passwords.json"
        have = json.loads(pw.read_text()) if pw.is_file() else {}
        pw.write_text(json.dumps({u: have.get(u) or secrets.token_urlsafe(9) for u in self.users}, indent=1))
        pw.chmod(0o600)

        token = self.state / "service_token"
        if not token.is_file():
            token.write_text(secrets.token_hex(32))
            token.chmod(0o600)

    @property
    def service_token(self) -> str:
        """The token of the hub service ``llm-lab-admin`` (start servers, call them): root only."""
        return (self.state / "service_token").read_text().strip()

    @property
    def passwords(self) -> dict[str, str]:
        return json.loads((self.state / "passwords.json").read_text())

    def write_config(self) -> None:
        for role in ("common", "learner", "instructor"):
            (self.config / role).mkdir(exist_ok=True)
            (self.config / role).chmod(0o755)
        (self.config / "common" / "nbgrader_config.py").write_text(
            "# every hub user's nbgrader settings (written by tools/teaching/hub/hub.py)\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"c.Exchange.root = {str(self.exchange)!r}\n",
            encoding="utf-8",
        )
        (self.config / "learner" / "labconfig").mkdir(exist_ok=True)
        (self.config / "learner" / "labconfig" / "page_config.json").write_text(
            json.dumps(LEARNER_PAGE_CONFIG, indent=2)
        )
        (self.config / "learner" / "jupyter_server_config.json").write_text(json.dumps(LEARNER_SERVER_CONFIG, indent=2))
        (self.config / "instructor" / "nbgrader_config.py").write_text(
            "# the instructor's nbgrader settings (written by tools/teaching/hub/hub.py)\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.root = {str(self.course)!r}\n",
            encoding="utf-8",
        )
        for p in self.config.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        settings = {
            "port": self.port,
            "proxy": str(self.proxy),
            "venv": str(self.venv),
            "state": str(self.state),
            "instructor": self.instructor,
            "students": self.students,
            "env": {u: self.user_env(u) for u in self.users},
            "root": str(ROOT),
            "limits": self.limits,
            "cull": self.cull,
            "start_timeout": self.start_timeout,
        }
        (self.state / "settings.json").write_text(json.dumps(settings, indent=2))

    def make_exchange(self) -> None:
        """The shared exchange: world-writable with the sticky bit (nbgrader's documented set-up); the course's
        folders inside it (inbound 2733, outbound 0755, feedback 0711) are made by ``release_assignment``."""
        self.exchange.mkdir(exist_ok=True)
        self.exchange.chmod(0o1777)

    def make_course(self) -> None:
        """~instructor/llm-lab: config, the instructor notebooks, source/ and release/ for every language."""
        from tools.teaching import student

        course, owner = self.course, pwd.getpwnam(self.instructor)
        course.mkdir(exist_ok=True)
        course.chmod(0o700)
        tmp = self.state / "sources"
        shutil.rmtree(tmp, ignore_errors=True)
        student.write_sources(self.instructor_dir, tmp, only=",".join(self.assignments))
        (course / "nbgrader_config.py").write_text(
            f"# the llm-lab course (written by tools/teaching/hub/hub.py); stubs of the {CONFIG_LANG!r} notebooks\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            "c.Execute.timeout = 120\n" + student.config_file_text(CONFIG_LANG).split("\n", 2)[2],
            encoding="utf-8",
        )
        for lang in _course.LANGS:
            key = course / "instructor-notebooks" / lang
            key.mkdir(parents=True, exist_ok=True)
            for number, assignment in self.assignments.items():
                for nb in self.instructor_dir.glob(f"{lang}/{number}_*.ipynb"):
                    shutil.copyfile(nb, key / nb.name)
                src = course / "source" / f"{assignment}-{lang}"
                src.mkdir(parents=True, exist_ok=True)
                for nb in (tmp / lang).glob(f"{number}_*.ipynb"):
                    shutil.copyfile(nb, src / nb.name)
        shutil.rmtree(tmp)
        for p in [course, *course.rglob("*")]:
            os.chown(p, owner.pw_uid, owner.pw_gid)
        for assignment in self.assignments.values():
            for lang in _course.LANGS:
                self.generate(f"{assignment}-{lang}", lang)

    def generate(self, assignment: str, lang: str) -> None:
        """``nbgrader generate_assignment`` as the instructor; the stubs of ``lang`` given on the command line (it
        outranks the course's nbgrader_config.py, which holds those of ``CONFIG_LANG``)."""
        self.nbgrader(self.instructor, "generate_assignment", assignment, "--force", *stub_args(lang), cwd=self.course)

    # ---- run -----------------------------------------------------------------------------------------
    def start(self, timeout: float = 120) -> None:
        """Start JupyterHub (a child process) and wait until it answers."""
        self.proc = process.start(self.state, self.proxy, self.url, timeout)

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM to the PID we started (JupyterHub stops its proxy and servers), SIGKILL to it after timeout."""
        process.stop(self.proc, self.state / "jupyterhub.pid", timeout)

    def logs(self) -> list[Path]:
        """The logs that exist: JupyterHub's (its services' too), its proxy's, each server's (servers/<user>.log)."""
        found = [self.state / "jupyterhub.log", self.state / "proxy.log", *sorted(self.state.glob("servers/*.log"))]
        return [p for p in found if p.is_file()]

    def remove_users_and_state(self) -> None:
        """Stop the hub, delete the users this tool created (and their homes), the exchange, state and config;
        the learners' venv stays for the next run."""
        self.stop()
        made_file = self.state / "users.json"
        for user in json.loads(made_file.read_text()) if made_file.is_file() else []:
            run(["userdel", "--remove", user], check=False, stderr=subprocess.DEVNULL)
        for d in (self.state, self.exchange, self.config, self.dir / "dist"):
            shutil.rmtree(d, ignore_errors=True)

    def remove(self) -> None:
        self.remove_users_and_state()
        shutil.rmtree(self.dir, ignore_errors=True)
