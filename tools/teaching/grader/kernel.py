"""One submission's kernel while it is graded: nbclient with a per-cell output cap, the kernel started in the
bubblewrap sandbox (``sandbox``), and the grader's round trip to it: each request of the checkers
(``llm_lab.exercises.grading.proxies``) runs as a cell that calls the kernel's answering side
(``llm_lab.exercises.grading.answering``), whose printed reply is read back as data (``wire``)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import math
import os
import secrets
import stat
import subprocess
import threading
from collections import Counter
from pathlib import Path
from time import monotonic

import nbformat
import zmq
import zmq.asyncio
from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from traitlets import default

from llm_lab.exercises.grading import KERNEL_MODULE, kernel_cell, proxies, wire
from tools.teaching.grader import sandbox, sandbox_seccomp, seal_plan, sealing, source_hidden, stopping
from tools.teaching.grader.report import one_line
from tools.teaching.grader.sandbox_limits import WALL_FACTOR

# One frame the grader accepts from a kernel: the largest reply it reads, plus room for the message's
# envelope. A larger frame closes that connection before it is read into memory (ZMQ's MAXMSGSIZE).
MAX_FRAME = wire.MAX_REPLY_BYTES + 2**20
MAX_TOTAL_CELLS = 40  # output kept for a whole submission: this many cells' allowance (the rest dropped)


class CappedKernelClient(AsyncKernelClient):
    """The grader's sockets to a kernel: no frame larger than MAX_FRAME is received."""

    @default("context")
    def _context_default(self) -> zmq.asyncio.Context:
        self._created_context = True
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME)
        return context


class CappedClient(NotebookClient):
    """nbclient holding a bounded amount of what the kernel sends: at most ``max_output`` bytes of output per
    cell and ``MAX_TOTAL_CELLS`` times that per submission (the rest dropped and noted; the first error of a
    cell is kept, shortened); ``limits`` gives some cells (the grader's requests) a larger allowance. Comm
    (widget) messages and display updates are dropped unread: the grader needs neither."""

    def __init__(self, nb, max_output: int, **kw):
        super().__init__(nb, **kw)
        self.max_output, self.sizes, self.cut, self.limits = max_output, Counter(), set(), {}
        self.total = 0
        self.cpu = None  # the submission's CPU seconds so far (its cgroup's), or None: wall time is judged
        self._cell = (0.0, 0.0, 0)  # the running cell's start (wall, CPU) and its limit

    def _get_timeout(self, cell):
        """With a CPU clock, a cell's limit is the submission's CPU time: nbclient wakes every second and
        ``_async_handle_timeout`` judges."""
        limit = super()._get_timeout(cell)
        if self.cpu is None or limit is None or cell is None:
            return limit
        self._cell = (monotonic(), self.cpu(), limit)
        return 1

    async def _async_handle_timeout(self, timeout, cell=None):
        if self.cpu is not None and cell is not None:
            wall, cpu, limit = self._cell
            if self.cpu() - cpu < limit and monotonic() - wall < WALL_FACTOR * limit:
                await asyncio.sleep(0.2)
                return None  # not yet: nbclient waits on
            timeout = limit
        return await super()._async_handle_timeout(timeout, cell)

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(json.dumps(content))
        self.sizes[cell_index] += size
        if cell_index not in self.limits:
            self.total += size
        if (
            self.sizes[cell_index] > self.limits.get(cell_index, self.max_output)
            or self.total > MAX_TOTAL_CELLS * self.max_output
            and cell_index not in self.limits
        ):
            self.cut.add(cell_index)
            if msg.get("msg_type") == "error" and not any(o.get("output_type") == "error" for o in outs):
                outs.append(
                    nbformat.v4.new_output(
                        "error",
                        ename=str(content.get("ename"))[:100],
                        evalue=str(content.get("evalue"))[:300],
                        traceback=[],
                    )
                )
            return None
        return super().output(outs, msg, display_id, cell_index)

    def handle_comm_msg(self, outs, msg, cell_index):
        return None  # widget state is not kept: 400 MB of comm messages cost nothing here

    def _update_display_id(self, display_id, msg):
        return None  # an update would replace counted output with uncounted data


class Kernel:
    """One submission's kernel: in the bubblewrap sandbox (``sandbox``) unless ``sandboxed`` is False.

    ``run()`` executes the plan's cells (``plan``: a ``matching.ExecutionPlan``); ``send(request, timeout)`` is
    the grader's round trip to the kernel: one request cell, whose printed reply is read back as data. Used as a
    context manager; leaving it ends the kernel and, with the sandbox, every process the submission started.

    In the sandbox the kernel holds the ``llm_lab`` sealed for ``notebooks`` (the submission's own notebook): the
    course cells of the plan that name something the seal leaves out run statement by statement
    (``sealing.tolerant``), so that an import of a sealed answer costs only that statement; a course cell's error
    never costs the learner (the judge reads the learner's cells only)."""

    def __init__(
        self,
        plan,
        tmp: Path,
        cell_timeout: float,
        max_output: int,
        sandboxed: bool,
        max_seconds: float,
        notebooks: tuple[str, ...] = (),
    ):
        self.plan, self.tmp, self.cell_timeout = plan, tmp, cell_timeout
        self.sandboxed, self.max_seconds = sandboxed, max_seconds
        self.conn = tmp / "conn"
        self.conn.mkdir()
        self.work = tmp / "work"  # the kernel's folder without the sandbox ("../x" written still lands in tmp)
        self.work.mkdir()
        specs = tmp / "kernels"
        (specs / "llm-lab-grading").mkdir(parents=True)
        self.notebooks = notebooks
        argv = sandbox.kernel_argv(sandboxed, notebooks)
        if sandboxed:
            _tolerate_the_seal(plan, notebooks)
        self.box = sandbox.Box() if sandboxed else None  # its uid and cgroup, let go in __exit__
        if sandboxed:
            argv = self.box.wrap(argv, [str(self.conn)], notebooks=notebooks)
        self.km = self._manager(specs, argv, sandboxed)
        if sandboxed:
            sandbox.prepare(self.conn, self.box.uid)
        self.client = CappedClient(
            plan.nb,
            max_output,
            km=self.km,
            timeout=math.ceil(cell_timeout),
            allow_errors=True,
            interrupt_on_timeout=True,
            startup_timeout=120,
            error_on_timeout={
                "ename": "CellTimeout",
                "evalue": f"the cell ran past {cell_timeout:g} s",
                "traceback": [],
            },
            resources={"metadata": {"path": str(self.work)}},
        )
        self.slot = len(plan.nb.cells)
        self.next = 0  # the next plan cell to run
        self.died = ""
        # where the kernel died of the code itself (a crash, os._exit, out of memory), not of the whole
        # submission's time limit: the plan cell then running, or ``slot`` (a check's call); None otherwise
        self.died_in: int | None = None
        self._exit_asked: int | None = None  # the plan cell whose reply asked the kernel to exit (``exit()``)
        self.client.on_cell_executed = self._executed
        self._timer: threading.Thread | None = None
        self._done = threading.Event()
        group = self.box.cgroup if self.box is not None else None
        if group is not None:
            self.client.cpu = group.cpu_seconds

    def _manager(self, specs: Path, argv: list[str], sandboxed: bool) -> AsyncKernelManager:
        """The manager of the kernel ``llm-lab-grading`` that runs ``argv``: its spec written under ``specs``,
        its connection file (IPC in ``conn`` with the sandbox) written."""
        (specs / "llm-lab-grading" / "kernel.json").write_text(
            json.dumps(
                {"argv": argv, "display_name": "llm-lab grading", "language": "python", "interrupt_mode": "message"}
            )
        )
        kw = {"transport": "ipc", "ip": str(self.conn / "k")} if sandboxed else {}
        km = AsyncKernelManager(
            kernel_name="llm-lab-grading",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]),
            connection_file=str(self.conn / "kernel.json"),
            **kw,
        )
        km.client_factory = CappedKernelClient
        km.write_connection_file()
        return km

    def __enter__(self):
        self._stop = stopping.killing(self._stopped)  # a grader told to stop kills this kernel (stopping.stop)
        try:
            self._stop.__enter__()
        except BaseException:
            self._release()
            raise
        self._ctx = self.client.setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self._ctx.__enter__()
            if stopping.stopped():  # stopped while it started
                raise stopping.Stopped()
        except BaseException:  # a kernel that did not start: its sandbox and what it holds end here
            self._kill()
            self._release()
            self._stop.__exit__(None, None, None)
            raise
        if self.sandboxed:
            try:  # the sockets are bound: from now on the kernel cannot touch that folder
                sandbox.seal(self.conn, self.km.provisioner.process.pid)
            except BaseException:
                self.__exit__()
                raise
        self._warm_up()
        self._timer = threading.Thread(target=self._watch, daemon=True)
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        try:
            self._ctx.__exit__(None, None, None)
        except Exception:  # a kernel that is already gone
            pass
        finally:
            self._kill()
            self._release()
            self._stop.__exit__(None, None, None)
        return False

    def _stopped(self) -> None:
        """The grader is stopping (``stopping.stop``, from another thread): the kernel and its sandbox end now."""
        self.died = self.died or "the grader was stopped"
        self._kill()

    def _death(self) -> str:
        events = self.box.cgroup.events() if self.box is not None and self.box.cgroup is not None else {}
        if events.get("memory.oom_kill"):
            return (
                f"the submission's processes held more than {sandbox.MEMORY_MAX / 2**30:g} GiB together (its "
                "/tmp files and their kernel memory included) and were stopped"
            )
        if self._exit_asked is not None:
            return "the kernel exited (the code called exit() or quit())"
        return "the kernel died (the code called os._exit, crashed or ran out of memory)"

    def _release(self) -> None:
        if self.box is not None:
            self.box.close()

    TOOL_DIRS = (".ipython", ".matplotlib", ".cache", ".local", ".config", ".jupyter", "data-gym-cache")

    def written(self, limit: int = 1000) -> list[str]:
        """Files the code wrote in its private /tmp (read through the kernel's /proc root, names only), or in its
        folder when unsandboxed; at most ``limit`` entries are looked at."""
        process = getattr(self.km.provisioner, "process", None)
        top = self.work
        if self.sandboxed:
            if process is None or process.poll() is not None:
                return []  # the sandbox is gone, and its /tmp with it
            pids = [process.pid]
            for _ in range(2):  # bwrap -> bwrap (the namespace's init) -> the kernel
                try:
                    kids = Path(f"/proc/{pids[-1]}/task/{pids[-1]}/children").read_text().split()
                except OSError:
                    return []
                if not kids:
                    return []
                pids.append(int(kids[0]))
            top = Path(f"/proc/{pids[-1]}/root/tmp")  # the sandbox's own /tmp, seen from outside
        found = []
        # bound into /tmp: not written by the code
        mounted = set(sandbox.read_only_paths(self.notebooks)) | {str(self.conn)}
        for n, (folder, dirs, files) in enumerate(os.walk(top)):
            if n == 0:  # tools' caches
                dirs[:] = [d for d in dirs if d not in self.TOOL_DIRS]
            inside = "/tmp/" + str(Path(folder).relative_to(top))
            dirs[:] = [d for d in dirs if os.path.normpath(f"{inside}/{d}") not in mounted]
            found += [str(Path(folder, f).relative_to(top)) for f in files if _regular(os.path.join(folder, f))]
            if n > limit or len(found) > limit:
                break
        return sorted(found)

    # every module a learner cell may import, imported before any learner cell runs: an import in a learner cell
    # then finds it in sys.modules, never a file the notebook wrote under its name (sys.path is the notebook's)
    PRELOADED = sorted(source_hidden.READABLE_MODULES - {"__future__", "llm_lab"})
    WARM_UP = (
        f"import torch\nimport {KERNEL_MODULE}\n"
        f"for _m in {PRELOADED!r}:\n    try:\n        __import__(_m)\n    except Exception:\n        pass\ndel _m"
    )

    # the process filter is on wherever the sandbox is, but in test_sandbox_limits (it would refuse their forks)
    NO_PROCESSES = True
    GUARDED = True  # kernel_guard: off only in test_grade_hostile, which tests the sandbox on its own

    def _warm_up(self) -> None:
        """Import torch and the answering code before the first cell, with time to spare: on a busy machine a
        first cell's ``import torch`` can outlast the cell timeout, and an import interrupted half way leaves
        torch unusable for the rest of the notebook."""
        # sandboxed, the kernel denies itself new processes (sandbox_seccomp), then turns its guard on (kernel_guard)
        filtered = self.sandboxed and self.NO_PROCESSES
        guard = f"\nimport {KERNEL_MODULE} as _k\n_k.guard()\ndel _k" if self.GUARDED else ""
        code = self.WARM_UP + ("\n" + sandbox_seccomp.installer() if filtered else "") + guard
        cell = nbformat.v4.new_code_cell(code)
        self.plan.nb.cells.append(cell)
        self.client.timeout = max(180, math.ceil(self.cell_timeout))
        try:
            self.client.execute_cell(cell, self.slot, store_history=False)
        except DeadKernelError:
            self.died = "the kernel died while starting"
        finally:
            self.client.timeout = math.ceil(self.cell_timeout)
        if not self.died and cell_error(cell):  # never graded without what the warm-up sets up
            self.died = f"the kernel could not be prepared ({cell_error(cell)})"
            self._kill()

    def _kill(self) -> None:
        """End the kernel's process now: with the sandbox, its PID namespace and every process in it."""
        process = getattr(self.km.provisioner, "process", None)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def _watch(self):
        """The whole submission's limits, while it runs: ``max_seconds`` of its own CPU time (all its processes
        together, where its cgroup counts them; ``WALL_FACTOR`` times as much wall time), else of wall time; on
        cgroup v1, whose OOM killer ends one process, the whole submission once it has acted."""
        group = self.box.cgroup if self.box is not None else None
        start, cpu0 = monotonic(), group.cpu_seconds() if group is not None else 0.0
        wall = self.max_seconds * (WALL_FACTOR if group is not None else 1)
        while not self._done.wait(0.25):
            if group is not None and group.cpu_seconds() - cpu0 > self.max_seconds:
                self.died = f"the submission used more than {self.max_seconds:g} s of CPU in all and was stopped"
            elif monotonic() - start > wall:
                self.died = f"the submission ran past {wall:g} s in all and was stopped"
            elif group is not None and group.version == 1 and group.events().get("memory.oom_kill"):
                self.died, self._oom = self._death(), True
            else:
                continue
            self._kill()  # nbclient notices the dead kernel within a second
            return

    _oom = False  # the watch stopped the submission for its memory (cgroup v1): a death of the code, like a crash

    def _executed(self, cell, cell_index: int, execute_reply) -> None:
        """nbclient's hook after each cell: a reply that asks the kernel to exit (``exit()``, ``quit()``: the kernel
        stops its loop a moment after replying) names the cell that ended it, not the next one, which finds it dead."""
        payload = (execute_reply or {}).get("content", {}).get("payload", [])
        if cell_index < self.slot and any(p.get("source") == "ask_exit" and not p.get("keepkernel") for p in payload):
            self._exit_asked = cell_index

    def _died_of_code(self, index: int) -> None:
        """The kernel died while running plan cell ``index`` (``slot``: a check's request): why, and whether the
        code did it (``died_in``: that cell, or the cell that asked it to exit) rather than the whole submission's
        limits or the grader stopping."""
        if not self.died or self._oom:
            self.died_in = self._exit_asked if self._exit_asked is not None else index
        self.died = self.died or self._death()

    def run(self, until: int | None = None) -> None:
        """The plan's cells up to (not including) ``until``, from where the last run stopped; a cell that errs
        or times out does not stop the others."""
        stop = len(self.plan.nb.cells) if until is None else min(until, self.slot)
        while self.next < stop and not self.died:
            try:
                self.client.execute_cell(self.plan.nb.cells[self.next], self.next)
            except DeadKernelError:
                self._died_of_code(self.next)
            self.next += 1

    def send(self, request: dict, timeout: float) -> object:
        """One round trip: the request as a cell that prints the kernel's reply; the reply as parsed JSON."""
        if self.died:
            raise proxies.RemoteFailed(self.died)
        nonce = "LLMLAB-REPLY-" + secrets.token_hex(8) + " "
        payload = base64.b64encode(json.dumps({**request, "nonce": nonce}).encode()).decode()
        cell = nbformat.v4.new_code_cell(kernel_cell(f"serve({payload!r})"))
        if len(self.plan.nb.cells) == self.slot:
            self.plan.nb.cells.append(cell)
        self.plan.nb.cells[self.slot] = cell
        self.client.sizes[self.slot] = 0
        self.client.limits[self.slot] = 4 * wire.MAX_BYTES
        self.client.timeout = max(1, math.ceil(timeout))  # nbclient wants whole seconds
        try:
            self.client.execute_cell(cell, self.slot, store_history=False)
        except DeadKernelError:
            self._died_of_code(self.slot)
            raise proxies.RemoteFailed(self.died) from None
        finally:
            self.client.timeout = math.ceil(self.cell_timeout)
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        return reply_of(text, nonce, cell_error(cell))


def reply_of(text: str, nonce: str, error: str = "") -> object:
    """The kernel's one reply in ``text`` (the request cell's output), parsed. Two lines with the nonce, or one from
    a cell that then failed (the answering code catches every error and prints last), are a reply the learner's code
    printed itself: RemoteFailed. ``error``: the cell's error, for the message when there is no reply."""
    replies = [line[len(nonce) :] for line in text.splitlines() if line.startswith(nonce)]
    if len(replies) > 1:
        raise proxies.RemoteFailed(f"the kernel answered {len(replies)} times to one request: a forged reply")
    if replies and error:
        raise proxies.RemoteFailed(f"the request's cell failed ({error}) after a reply was printed: a forged reply")
    if not replies:
        if error == "timeout":
            raise TimeoutError
        raise proxies.RemoteFailed("the kernel did not answer" + (f" ({error})" if error else ""))
    try:
        return wire.parse(base64.b64decode(replies[0], validate=True))
    except (wire.WireError, ValueError, binascii.Error) as exc:
        raise proxies.RemoteFailed(f"the kernel's reply was not readable ({exc})"[:300]) from None


def _tolerate_the_seal(plan, notebooks) -> None:
    """The plan's course cells (not the learner's, not the capture cells) that name something the sealed llm_lab
    leaves out, rewritten by ``sealing.tolerant``."""
    names = seal_plan.sealed_names(sandbox._assigned(notebooks))
    skip = set(plan.learner) | set(plan.grading.values())
    for i, cell in enumerate(plan.nb.cells):
        if i not in skip and cell.cell_type == "code":
            cell.source = sealing.tolerant(cell.source, names)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:  # gone meanwhile
        return False


def cell_error(cell) -> str:
    for o in cell.get("outputs", []):
        if o.get("output_type") == "error":
            if o.get("ename") in ("CellTimeout", "KeyboardInterrupt"):  # the grader's interrupt: the time limit
                return "timeout"
            return f"{o.get('ename')}: {one_line(o.get('evalue'))}"
    return ""
