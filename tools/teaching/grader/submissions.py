"""Finding and reading what students handed in, without trusting it, and the record of each submitted file.

A submission folder is written by the class: an entry may be a symbolic link (to the answer key, to
``/etc/shadow``, to ``/dev/zero``), a folder linked to the course's notebooks, a named pipe, a device, a file
of gigabytes or a JSON text nested 100,000 deep. So:

- only **regular files** are read, and only **inside the folder** they were handed in: every path is opened
  component by component from that folder with ``O_NOFOLLOW`` (a link anywhere on the way is refused, never
  followed) and ``O_NONBLOCK`` (a pipe or device is never waited on), and ``fstat`` must say "regular file"
  before one byte is read;
- at most ``MAX_FILE_BYTES`` are read from one file (its apparent size, counted as it is read), and at most
  ``MAX_ENTRIES`` entries of one student's folder are looked at;
- a notebook's saved outputs are dropped as it is parsed (``load``: the grader runs the code again and grades
  nothing a learner's kernel printed), so the bound that matters, ``MAX_SOURCE_BYTES``, applies to what is
  left: an honest notebook with 90 MB of printed text and figures is graded, one with 60 MB of source is not;
- anything else is a **problem row** for that student (0 points, the reason in the report), never an
  exception that stops the class.

:class:`Submission` is one submitted file as the grader carries it from here to the report: who handed it in,
where, which course notebook it is, its verdicts and notes, or the problem that kept it from being graded.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools.teaching.grader.report import one_line

MAX_FILE_BYTES = 200_000_000  # read from one file at most (outputs included); a larger file is refused unread
MAX_SOURCE_BYTES = 50_000_000  # of the notebook once its outputs and attachments are dropped
MAX_ENTRIES = 2_000  # entries of one student's folder looked at
MAX_DEPTH = 8  # folder levels inside one student's folder
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FLAGS = (
    os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
)
_DIR_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class Unreadable(ValueError):
    """A handed-in path that is not read: a link, a pipe, a device, too big, outside its folder."""


class TooLarge(Unreadable):
    """A handed-in file larger than the bound it was read (or copied) with."""


@dataclass
class Submission:
    """One submitted file. ``problem`` set: it could not be graded at all (0 points), with the reason;
    ``verdicts``: one ``judging.Verdict`` per exercise once graded."""

    student: str
    path: Path
    notebook: str = ""
    lang: str = ""
    verdicts: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str = ""
    seconds: float = 0.0
    root: Path | None = None  # the folder it was handed in (read inside it only, links never followed)
    not_counted: str = ""  # a second file of one notebook: the name of the file its student's row counts
    # the cells the grader ran as the learner's (``matching.ExecutionPlan.shown``/``added_after``): what an
    # instructor's review copy shows, never the file read again
    shown: dict[str, str] = field(default_factory=dict)
    added_after: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(verdict.points for verdict in self.verdicts)


def what(mode: int) -> str:
    """The kind of file ``mode`` (from lstat) is, in words."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def refused(name: str, mode: int) -> str:
    return (
        f"{name} is {what(mode)}, not a regular file: not read (links are never followed, pipes and "
        "devices never opened; hand in the notebook file itself)"
    )


def find(submissions: Path) -> list[Submission]:
    """Every entry of SUBMISSIONS (one per student): a notebook to grade, or a problem (not a notebook, an empty
    folder, a link, a pipe), looked at with lstat only: nothing is followed or opened."""
    found = []
    for name in sorted(os.listdir(submissions)):
        if name.startswith((".", "__MACOSX")):
            continue
        path = submissions / name
        student = name[: -len(".ipynb")] if name.endswith(".ipynb") else Path(name).stem or name
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            found.append(Submission(student, path, problem=f"could not be looked at ({exc.strerror})"))
            continue
        if stat.S_ISDIR(mode):
            found += folder(name, path)
        elif not stat.S_ISREG(mode):
            found.append(Submission(student, path, problem=refused(name, mode)))
        elif name.endswith(".ipynb"):
            found.append(Submission(student, path))
        else:
            found.append(Submission(student, path, problem=f"not a notebook: {name} (expected a .ipynb file)"))
    for submission in found:
        submission.root = submissions
    return found


def folder(student: str, top: Path) -> list[Submission]:
    """The notebooks in one student's folder (every level, hidden entries skipped), links and special files
    as problem rows; at most MAX_ENTRIES entries and MAX_DEPTH levels are looked at."""
    notebooks, problems, others, seen = [], [], [], 0
    todo = [(top, 0)]
    while todo:
        here, depth = todo.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Submission(student, here, problem=f"{here.name}: could not be listed ({exc.strerror})"))
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                problems.append(
                    Submission(
                        student,
                        top,
                        problem=f"more than {MAX_ENTRIES} entries in the folder: the rest were not looked at",
                    )
                )
                return sorted(notebooks, key=lambda f: f.path) + problems
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:  # gone meanwhile
                continue
            if stat.S_ISDIR(mode):
                if depth + 1 < MAX_DEPTH:
                    todo.append((path, depth + 1))
            elif not stat.S_ISREG(mode):
                problems.append(Submission(student, path, problem=refused(str(path.relative_to(top.parent)), mode)))
            elif entry.name.endswith(".ipynb"):
                notebooks.append(Submission(student, path))
            else:
                others.append(entry.name)
    if not notebooks and not problems:
        listed = ", ".join(sorted(others)[:5]) or "nothing"
        problems.append(Submission(student, top, problem=f"no .ipynb notebook in the folder (found: {listed})"))
    return sorted(notebooks, key=lambda f: f.path) + problems


def read(path: Path, root: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, a regular file inside ``root`` (itself trusted: the instructor's folder). Each
    component below ``root`` is opened with O_NOFOLLOW, the file with O_NONBLOCK; Unreadable if anything on the
    way is a link, if the file is not regular or is larger than ``limit`` bytes."""
    parts = _parts(path, root)
    fd = _open_inside(path, root, parts)
    try:
        return _read_fd(fd, str(Path(*parts)), limit)
    finally:
        os.close(fd)


def copy(path: Path, root: Path, dest: Path, limit: int = MAX_FILE_BYTES) -> int:
    """Copy ``path``, a regular file inside ``root`` (opened as ``read`` opens it), to the new file ``dest`` in
    chunks; returns the bytes written. Its apparent size is what counts, read as it is copied (a sparse file of
    49 MB that holds 1 MB on disk is 49 MB here; the blocks it holds are never asked): Unreadable, and ``dest``
    removed, once it is larger than ``limit``, and never more than ``limit`` bytes are written."""
    parts = _parts(path, root)
    name = str(Path(*parts))
    fd = _open_inside(path, root, parts)
    try:
        _regular(fd, name, limit)
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
        size = 0
        try:
            while True:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    return size
                if size + len(chunk) > limit:  # it grew while we copied
                    raise TooLarge(f"file is more than {limit / 1e6:.0f} MB: not graded")
                while chunk:
                    written = os.write(out, chunk)
                    size, chunk = size + written, chunk[written:]
        except BaseException:
            os.close(out)
            out = -1
            os.unlink(dest)
            raise
        finally:
            if out >= 0:
                os.close(out)
    finally:
        os.close(fd)


def _parts(path: Path, root: Path) -> tuple[str, ...]:
    """The components of ``path`` below ``root``; Unreadable if it is not inside it."""
    try:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        raise Unreadable(f"{path} is outside {root}: not read") from None
    if not parts or ".." in parts:
        raise Unreadable(f"{path} is not a file inside {root}: not read")
    return parts


def _open_inside(path: Path, root: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of ``root/parts``, opened component by component with O_NOFOLLOW (O_NONBLOCK for the file);
    Unreadable if anything on the way is a link, or a level is not a folder."""
    if os.open not in os.supports_dir_fd or not _NOFOLLOW:  # no openat here: check each level with lstat
        for i in range(1, len(parts) + 1):
            mode = os.lstat(root.joinpath(*parts[:i])).st_mode
            if not (stat.S_ISREG(mode) if i == len(parts) else stat.S_ISDIR(mode)):
                raise Unreadable(refused(str(Path(*parts[:i])), mode))
        return os.open(path, _FLAGS)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for i, part in enumerate(parts):
            mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
            last = i == len(parts) - 1
            if not (stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)):
                raise Unreadable(refused(str(Path(*parts[: i + 1])), mode))
            try:
                new = os.open(part, _FLAGS if last else _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:  # swapped for a link meanwhile (ELOOP), or gone
                raise Unreadable(f"{Path(*parts[: i + 1])} could not be opened safely ({exc.strerror})") from None
            os.close(fd)
            fd = new
    except BaseException:
        os.close(fd)
        raise
    return fd


def _regular(fd: int, name: str, limit: int) -> os.stat_result:
    """fstat of ``fd``: Unreadable unless it is a regular file of at most ``limit`` bytes (its apparent size)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Unreadable(refused(name, info.st_mode))
    if info.st_size > limit:
        raise TooLarge(f"file is {info.st_size / 1e6:.0f} MB, more than {limit / 1e6:.0f} MB: not graded")
    return info


def _read_fd(fd: int, name: str, limit: int) -> bytes:
    info = _regular(fd, name, limit)
    # read into one buffer of the file's size (no second copy of a large file), at most limit + 1 bytes
    buf, size = bytearray(min(info.st_size, limit) + 1), 0
    while size <= limit:
        if size == len(buf):  # it grew while we read
            buf.extend(bytes(min(len(buf), limit + 1 - size)))
        got = os.readv(fd, [memoryview(buf)[size : min(len(buf), size + (1 << 20))]])
        if not got:
            break
        size += got
    if size > limit:  # it grew while we read
        raise TooLarge(f"file is more than {limit / 1e6:.0f} MB: not graded")
    del buf[size:]
    return buf


def load(path: Path, root: Path | None = None) -> nbformat.NotebookNode:
    """Read a submitted notebook (``read``: a regular file inside ``root``, default its folder) without its saved
    outputs and attachments (``strip``); ValueError with a clear reason when it cannot be one, or when what is
    left is larger than ``MAX_SOURCE_BYTES``. Nothing in the file can raise anything else. Memory: the file's
    bytes, then its text, then the parsed JSON, each let go once the next is made (about twice the file's size
    at most for a text of ASCII): the grader calls it in the bounded reader (``reading``), never in its own
    process."""
    raw = read(path, path.parent if root is None else root)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not a text file (binary content), so not a notebook") from None
    del raw
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON (line {exc.lineno}: {exc.msg}): damaged, or not a notebook") from None
    except RecursionError:
        raise ValueError("JSON nested too deep to be a notebook: not graded") from None
    del text
    if not isinstance(data, dict) or "cells" not in data:
        raise ValueError("valid JSON but not a Jupyter notebook (no 'cells')")
    strip(data)
    try:
        kept = json.dumps(data)
    except RecursionError:
        raise ValueError("JSON nested too deep to be a notebook: not graded") from None
    del data
    if len(kept) > MAX_SOURCE_BYTES:
        raise ValueError(
            f"the notebook without its outputs is {len(kept) / 1e6:.0f} MB, more than "
            f"{MAX_SOURCE_BYTES / 1e6:.0f} MB: not graded"
        )
    try:
        nb = nbformat.reads(kept, as_version=4)
    except Exception as exc:  # nbformat raises several types for malformed notebooks (RecursionError too)
        raise ValueError(f"not a valid Jupyter notebook ({type(exc).__name__}: {one_line(str(exc))})") from None
    for cell in nb.cells:
        if "source" not in cell or "cell_type" not in cell:
            raise ValueError("not a valid Jupyter notebook (a cell without source)")
    return nb


def strip(data: dict) -> None:
    """Drop, in place, what a notebook's kernel or editor saved and the grader never reads: each cell's outputs
    (the grader runs the code again) and attachments (pasted images), and the old format's worksheets' too."""
    cells = list(data.get("cells") or []) if isinstance(data.get("cells"), list) else []
    for sheet in data.get("worksheets") or [] if isinstance(data.get("worksheets"), list) else []:
        if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list):
            cells += sheet["cells"]
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        if isinstance(cell.get("outputs"), list):
            cell["outputs"] = []
        cell.pop("attachments", None)
