"""What a submission's source says, read as text (parsed, never run), so no trick in the kernel can change it.

Every code cell of the notebook the grader runs (the course's cells, the learner's solution cells and the cells
the learner added) is read the way IPython reads it: through IPython's own ``TransformerManager`` (magics, ``!``,
``?``), then parsed. :class:`Reading` holds the parsed cells; ``Reading.verdict`` says, for one exercise, what
in the source decides it before any kernel is asked (``None``: nothing, the checkers' verdict stands):

Before the kernel runs anything, ``runnable`` replaces every learner cell the grader cannot vouch for by a comment,
so it runs nothing: a cell that changes the checkers or the watch on them (``source_tampering.tampering``: a
``check_*`` redefined, llm_lab's attributes set, its grading machinery, ``sys.modules``, IPython's input hooks,
``sys.setprofile``/``settrace`` and the threading hooks, threads and forks), a cell that runs code the grader cannot
read (``exec``, ``globals()``, a computed import, an IPython call other than the magics it writes itself, a magic
that runs code elsewhere, a module that is not installed: ``source_hidden``), and a cell that does not compile. What
is not run cannot hide anything from the other cells, so such a cell costs only what depends on it: the exercise
whose solution cell it is scores 0 with the reason (``tampered``, ``unreadable``, ``does_not_compile``), the others
are read and checked as if it were absent, and the submission's notes name it. A debugging look that is only
printed or displayed (``print(vars(layer))``, ``f.__code__.co_varnames`` as a cell's last line: ``source_looks``) is
read, not counted. What ``Reading.verdict`` then decides for one exercise:

- ``tampered`` / ``error`` (``unreadable``, ``does_not_compile``): the exercise's own solution cell was not run (as
  above), and nothing else the learner wrote defines its name; ``error`` (``crashed``) the same for a cell that
  killed an earlier kernel on this submission, left out when the grader runs it again (``cli._run``);
- ``reference``: the exercise's object is, or calls, llm_lab's own answer, found through every name it uses
  (imports, ``__import__("llm_lab")`` and ``importlib.import_module`` bases, attribute chains, ``getattr`` with a
  written name), or the course's own object of that name;
- ``missing``: the name the checker reads is not defined by a ``def``/``class`` of the learner, or something
  after that definition binds it again (a course cell that bound it before the exercise does not count).

Code that hides a name (``getattr`` with a computed string) is not found here; the kernel's own report of what
ran is the second check (the watch ``llm_lab.exercises.grading.answering`` runs each call under). Used by ``judging``.
"""

from __future__ import annotations
import __future__

import ast
import codeop
import functools
from dataclasses import dataclass, field

import llm_lab.exercises as exercises
from tools.teaching.grader import source_looks, source_names, source_tampering
from tools.teaching.grader.report import one_line
from tools.teaching.grader.source_hidden import (
    PYTHON_MAGICS,
    _magic,
    hidden,
    magic_code,
    string_loops,
)
from tools.teaching.grader.source_modules import readable_bindings, through_modules, unread_bindings, uses_unread

# What the source decides, in the submission's language (one entry per language of tools.course.LANGS).
# Why a learner cell was not run (``Skipped.kind``), and what that says for the exercise whose solution cell it is
NOT_RUN = {
    "does_not_compile": {
        "en": "does not compile ({why})",
        "zh": "无法编译（{why}）",
    },
    "unreadable": {
        "en": "cannot be read by the grader ({why})",
        "zh": "评分器读不懂（{why}）",
    },
    "tampered": {
        "en": "changes the checkers ({why})",
        "zh": "改动了检查器（{why}）",
    },
    "crashed": {  # read fine, but running it killed the kernel: graded again without it (``cli._run``)
        "en": "stopped the kernel when it ran ({why}), so the grader ran the notebook again without it",
        "zh": "运行时使内核停止（{why}），评分器不带它重新运行了笔记本",
    },
}
OWN_NOT_RUN = {
    "en": "your solution cell `{cell}` {reason}: the grader ran {what} of it, so `{key}` is not yours and this "
    "exercise scores 0 (the other exercises are graded as usual)",
    "zh": "你的解答单元格 `{cell}` {reason}：评分器{what}，所以 `{key}` 不是你写的，本练习 0 分（其他练习照常评分）",
}
OWN_CRASHED = {
    "en": "your solution cell `{cell}` {reason}: `{key}` is then not defined, so this exercise scores 0 (the other "
    "exercises are graded as usual)",
    "zh": "你的解答单元格 `{cell}` {reason}：此时 `{key}` 没有定义，所以本练习 0 分（其他练习照常评分）",
}
WHAT_NOT_RUN = {  # (the whole cell, some of its statements)
    "en": ("none", "not the statements that did so, nor the definition among them"),
    "zh": ("一行也没有运行它", "没有运行出问题的语句，定义也在其中"),
}
CELL_NOT_RUN = {
    "en": "cell `{cell}` was not run: it {reason}; only what depends on it is lost",
    "zh": "单元格 `{cell}` 没有运行：它{reason}；只影响依赖它的部分",
}
CELL_CRASHED = {
    "en": "cell `{cell}` {reason}; only what depends on it is lost",
    "zh": "单元格 `{cell}` {reason}；只影响依赖它的部分",
}
PART_NOT_RUN = {
    "en": "cell `{cell}`: a part of it {reason}; that part was not run, the rest was; only what depends on it is lost",
    "zh": "单元格 `{cell}`：其中一部分{reason}；这部分没有运行，其余照常运行；只影响依赖它的部分",
}
RAN_UNVOUCHED = {  # only where every cell ran (``reading.read_submission``'s ``run_unvouched``, to test the sandbox)
    "en": "cell `{cell}` {reason} and ran: every exercise checked after it scores 0",
    "zh": "单元格 `{cell}` {reason}，并且运行了：在它之后检查的练习都是 0 分",
}
NOT_RUN_SOURCE = "# llm-lab grader: this cell of yours was not run ({kind})"
NOT_RUN_PART = "# llm-lab grader: {n} statement{s} of this cell of yours not run ({kind}); the rest runs as read\n"
# IPython compiles a cell with the flags of every ``from __future__`` an earlier cell ran (barry_as_FLUFL makes
# ``<>`` valid): a cell runs nothing only if it compiles neither with none of them nor with all
FUTURE_FLAGS = functools.reduce(
    lambda a, b: a | b, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
)
PRECOMPUTABLE = {"uses_torch_mask"}  # ruled-out answers that depend only on a size
READY_MADE = {
    "en": "your code names `{found}`, torch's ready-made answer: not allowed in this exercise (made before the "
    "check, it is still torch's mask): no credit. Compare with it after the check",
    "zh": "你的代码用到了 `{found}`，这是 torch 的现成答案：本练习不允许使用"
    "（在检查之前算好，它仍是 torch 的遮蔽）：不计分。检查通过后再拿它来对照",
}
REFERENCE = {
    "en": "the solution uses {found}, llm_lab's own code for this exercise: no credit",
    "zh": "解答用了 {found}，即 llm_lab 自带的代码：不计分",
}


def ready_made(exercise: str, trees: list) -> tuple[str, str] | None:
    """(name, hint) of a callable the exercise rules out whose answer depends only on a size (``PRECOMPUTABLE``:
    torch's ready-made causal masks), named anywhere in the learner's cells before the check (``trees``; in a string
    too, as a getattr or a loop over strings names it): called
    at cell level or in a default argument it runs where the watch on the learner's call cannot see it, and the
    call only slices what it made. ``None`` if none is named."""

    record = exercises.REGISTRY.get(exercise)
    ruled_out = {q.rpartition(".")[2]: (q, h) for _, q, h in getattr(record, "forbidden", ()) if h in PRECOMPUTABLE}
    for node in (n for tree in trees for n in ast.walk(tree)):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # getattr(nn.Transformer, "...") and kin
            name = node.value.strip().rpartition(".")[2]
        if name in ruled_out:
            return ruled_out[name]
    return None


@dataclass(frozen=True)
class Finding:
    """What the source decides for one exercise, as the grader's verdict fields."""

    status: str
    hint: str  # the mistake's name
    message: str


@dataclass
class Cell:
    source: str
    learner: bool
    tree: ast.Module | None = None
    unreadable: str = ""  # why the grader cannot read it ("" if it can)
    broken: str = ""  # why IPython runs none of it: it does not compile ("" if it compiles)
    tampering: list[str] = field(default_factory=list)  # what in it changes the checkers


@functools.lru_cache(maxsize=4096)  # the course's cells are the same in every submission: read once per run
def parse(source: str, depth: int = 0) -> ast.Module:
    """``source`` as IPython runs it: its magics, ``!`` and ``?`` transformed, then parsed (SyntaxError if it
    cannot be); the Python inside ``%%capture``/``%%time``/``%time``/``%prun`` is parsed in place, ``%timeit``'s
    inside a function, as IPython runs it.
    The tree is shared (cached): read it, never change it."""
    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(source))
    if depth > 8:
        raise SyntaxError("magics nested too deep")
    body = []
    for stmt in tree.body:
        magic = _magic(stmt) if isinstance(stmt, ast.Expr) else None
        if magic and magic[1] == "timeit":  # IPython times the setup and the code inside a function of its own
            inner = ast.parse("def _timed():\n    pass\n").body[0]  # (a name bound there is that function's)
            inner.body = parse(magic_code(*magic), depth + 1).body or inner.body
            body.append(inner)
        elif magic and magic[1] in PYTHON_MAGICS:
            body += parse(magic_code(*magic), depth + 1).body
        else:
            body.append(stmt)
    tree.body = body
    return tree


def does_not_compile(source: str) -> str:
    """Why IPython runs nothing of the cell ``source``: it transforms the cell, then compiles all of it before
    running any (``InteractiveShell.run_cell``), so a cell that does not compile (a typo, an unclosed bracket, a
    bad indent) runs nothing; "" if it compiles, under no ``from __future__`` flag or under all of them, or if
    the transformation itself fails (not decided here)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        code = TransformerManager().transform_cell(source)
    except Exception:  # IPython's transformer on input it does not expect: the cell stays unreadable
        return ""
    why = ""
    for flags in (0, FUTURE_FLAGS):
        try:
            compile(code, "<cell>", "exec", flags | codeop.PyCF_DONT_IMPLY_DEDENT | ast.PyCF_ONLY_AST, True)
        except (SyntaxError, ValueError, OverflowError, TypeError) as exc:
            line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
            why = why or f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{line}"
        else:
            return ""
    return why


@dataclass
class Reading:
    """The parsed cells of the executed notebook, in order (``learner``: a cell the learner wrote)."""

    cells: list[Cell]
    names: source_names.Names = field(init=False)
    skipped: dict[int, Skipped] = field(default_factory=dict)  # learner cells not run (``runnable``)

    def __post_init__(self):
        for cell in self.cells:
            self._parse(cell)
        looks = source_looks.trusted([c.tree for c in self.cells if c.learner and c.tree is not None])
        try:
            kept = source_looks.kept([(c.tree, c.learner) for c in self.cells if c.tree is not None]) if looks else ()
        except RecursionError:
            kept = frozenset()
        looped = string_loops([c.tree for c in self.cells if c.tree is not None])
        trees = [c.tree for c in self.cells if c.tree is not None]
        checks = source_tampering.course_checks([c.tree for c in self.cells if not c.learner and c.tree is not None])
        modules = source_tampering.module_names(trees)
        self._context = (
            looks,
            frozenset(kept),
            looped,
            checks,
            modules,
            unread_bindings(trees),
            readable_bindings(trees),
        )
        for cell in self.cells:
            if cell.learner and cell.tree is not None:
                try:
                    cell.unreadable, cell.tampering = self._judge(cell.tree)
                except RecursionError:  # an expression nested past what the reading follows
                    cell.unreadable = "nested too deeply to read"
        self.names = source_names.Names([(c.tree, c.learner) for c in self.cells])

    def _judge(self, tree: ast.Module) -> tuple[str, list[str]]:
        """(why ``tree`` is unreadable or "", what in it tampers), in the context of the whole notebook."""
        looks, kept, looped, checks, modules, unread, readable = self._context
        why = hidden(tree, looks=looks, kept=kept, looped=looped) or uses_unread(tree, unread)
        why = why or through_modules(tree, readable)
        return why, source_tampering.tampering([tree], checks, modules)

    def kept_statements(self, index: int) -> list[ast.stmt] | None:
        """The top-level statements of the learner's cell ``index`` that are readable and do not tamper, each read
        alone in the notebook's context; None when the cell cannot be split (it does not parse, has one statement,
        or none of its statements alone is the problem)."""
        tree = self.cells[index].tree
        if tree is None or len(tree.body) < 2:
            return None
        try:
            good = [stmt for stmt in tree.body if self._judge(ast.Module([stmt], type_ignores=[])) == ("", [])]
        except RecursionError:
            return None
        return good if 0 < len(good) < len(tree.body) else None

    @staticmethod
    def _parse(cell: Cell) -> None:
        try:
            cell.tree = parse(cell.source)
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
            line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
            cell.unreadable = f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{line}"
            if cell.learner:  # a magic's Python that does not parse is unreadable, the cell may run
                cell.broken = does_not_compile(cell.source)
        except Exception as exc:  # IPython's transformer on input it does not expect
            cell.unreadable = f"{type(exc).__name__} in IPython's transformer"

    def verdict(self, key: str, exercise: str, until: int, lang: str = "en", own=()) -> Finding | None:
        """What the source decides for exercise ``exercise`` (object ``key``) checked at cell ``until``; the
        message in ``lang``. ``own``: the indices of this exercise's solution cells. Read after ``runnable``: a
        learner cell not run (``skipped``) counts only when it is one of ``own`` and ``key`` is then not defined."""
        learner = [(i, c) for i, c in enumerate(self.cells[:until]) if c.learner]
        hidden_here = next(((i, c) for i, c in learner if c.unreadable or c.tampering), None)
        if hidden_here is not None:  # not read through ``runnable``: it ran, and what it hides may decide anything
            cell = hidden_here[1]
            kind = "tampered" if cell.tampering else "unreadable"
            reason = NOT_RUN[kind][lang].format(why=", ".join(cell.tampering) or cell.unreadable)
            message = RAN_UNVOUCHED[lang].format(cell=one_line(cell.source, 60), reason=reason)
            return Finding("tampered" if cell.tampering else "error", kind, message)
        ready = ready_made(exercise, [c.tree for _, c in learner if c.tree is not None])
        if ready:
            return Finding("fail", ready[1], READY_MADE[lang].format(found=ready[0]))
        try:
            found, why = self.names.reference(key, exercise, until), self.names.not_defined(key, until, lang)
        except RecursionError:
            return Finding("error", "unreadable", NOT_RUN["unreadable"][lang].format(why="nested too deeply to read"))
        if found:
            return Finding("reference", "reference", REFERENCE[lang].format(found=found))
        skipped = next((self.skipped[i] for i in own if i in self.skipped and i < until), None)
        if why and skipped is not None:
            reason = NOT_RUN[skipped.kind][lang].format(why=skipped.why)
            what = WHAT_NOT_RUN[lang][0 if skipped.whole else 1]
            own_message = OWN_CRASHED if skipped.kind == "crashed" else OWN_NOT_RUN
            return Finding(
                "tampered" if skipped.kind == "tampered" else "error",
                skipped.kind,
                own_message[lang].format(cell=one_line(skipped.source, 60), reason=reason, what=what, key=key),
            )
        return Finding("missing", "not_defined", why) if why else None

    def not_run_notes(self, lang: str = "en") -> list[str]:
        """One note per learner cell ``runnable`` did not run, for the submission's feedback and the report."""
        return [
            (CELL_CRASHED if s.kind == "crashed" else CELL_NOT_RUN if s.whole else PART_NOT_RUN)[lang].format(
                cell=one_line(s.source, 60), reason=NOT_RUN[s.kind][lang].format(why=s.why)
            )
            for s in self.skipped.values()
        ]


@dataclass(frozen=True)
class Skipped:
    """A learner cell ``runnable`` did not run: its source, why (``kind``: a key of ``NOT_RUN``) and the detail."""

    source: str
    kind: str
    why: str
    whole: bool = True  # the whole cell, else only its statements that were the problem


def runnable(cells, learner: list[int]) -> Reading:
    """A :class:`Reading` of ``cells`` (nbformat code cells, changed in place) after every learner cell that does not
    compile, cannot be read or tampers is replaced by a comment (``NOT_RUN_SOURCE``), so the kernel runs none of
    it; read again until no such cell is left (leaving a cell out can change how another is read: a look it kept).
    Where only some top-level statements of a cell are the problem (``import pdb`` or ``!pip install x`` beside a
    right ``def``), only those are left out, and the rest runs as the grader unparsed it from its reading.
    ``Reading.skipped`` holds what was left out (the cell's first reason)."""
    skipped: dict[int, Skipped] = {}
    for _ in range(len(learner) + 1):
        reading = read(cells, learner)
        bad = {i: c for i, c in enumerate(reading.cells) if c.learner and (c.unreadable or c.tampering)}
        if not bad:
            break
        for i, cell in bad.items():
            kind = "tampered" if cell.tampering else "does_not_compile" if cell.broken else "unreadable"
            why = ", ".join(cell.tampering) or cell.broken or cell.unreadable
            kept = reading.kept_statements(i)
            first = skipped.setdefault(i, Skipped(cells[i].source, kind, why, whole=kept is None))
            if kept is None:  # the whole cell
                skipped[i] = Skipped(first.source, first.kind, first.why, whole=True)
                cells[i].source = NOT_RUN_SOURCE.format(kind=kind)
            else:  # only its statements that are the problem: the rest runs as the grader read it
                left = len(cell.tree.body) - len(kept)
                header = NOT_RUN_PART.format(n=left, s="s" if left > 1 else "", kind=kind)
                cells[i].source = header + ast.unparse(ast.Module(kept, type_ignores=[])) + "\n"
    reading.skipped = dict(sorted(skipped.items()))
    return reading


def read(cells, learner: list[int]) -> Reading:
    """A :class:`Reading` of a notebook's code cells; ``learner``: the indices of the cells the learner wrote.
    Cells that are not code are read as empty."""
    mine = set(learner)
    return Reading([Cell(c.source if c.cell_type == "code" else "", i in mine) for i, c in enumerate(cells)])
