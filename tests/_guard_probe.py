"""The probe of the graded kernel's guard (llm_lab/exercises/grading/kernel_guard.py), shared by its tests: run as
``python -c PROBE FOLDER`` (FOLDER: where it may write), it tries each route that runs unread code before the guard
(the control) and after, and what an honest notebook needs; prints one JSON line."""

PROBE = r"""
import collections, ctypes, dataclasses, gc, glob, importlib.machinery, importlib.util, json, os, pickle, shutil
import sys, threading, time, types, typing
import torch
from llm_lab.exercises.grading import answering, kernel_guard

os.chdir(sys.argv[1])
sys.path.insert(0, sys.argv[1])
with open("written_mod.py", "w") as f:
    f.write("X = 1\n")
so = glob.glob(os.path.join(os.path.dirname(json.__file__), "..", "lib-dynload", "_json*.so"))[0]
shutil.copy(so, "_json_copy.so")

def helper():
    return 1

class Hidden(dict):  # a mapping whose iteration shows no name, while dataclasses reads .items()
    def __iter__(self):
        return iter(())

HIDDEN = Hidden({"a=print('ran')": int})

def ext():
    loader = importlib.machinery.ExtensionFileLoader("_json", os.path.abspath("_json_copy.so"))
    return importlib.util.module_from_spec(importlib.util.spec_from_loader("_json", loader))

def spec_file():
    spec = importlib.util.spec_from_file_location("written_by_spec", os.path.abspath("written_mod.py"))
    spec.loader.exec_module(types.ModuleType("written_by_spec"))

def in_thread(fn):  # fn run in a thread of its own; what it raised is raised here
    out = {}
    def run():
        try:
            fn()
        except Exception as err:
            out["err"] = err
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "err" in out:
        raise out["err"]

HOSTILE = {
    "eval": lambda: eval("1 + 1"),
    "exec": lambda: exec("y = 2", {}),
    "compile": lambda: compile("1", "<s>", "eval"),
    "type hints": lambda: typing.get_type_hints(type("B", (), {"__annotations__": {"a": "print('ran') or int"}})),
    "dataclass field": lambda: dataclasses.dataclass(type("D", (), {"__annotations__": {"a=print('ran')": int}})),
    "dataclass mapping": lambda: dataclasses.dataclass(type("E", (), {"__annotations__": HIDDEN})),
    "pickle": lambda: pickle.loads(pickle.dumps(types.SimpleNamespace())),
    "ctypes": lambda: ctypes.CDLL(None),
    "gc": lambda: gc.get_referrers(helper),
    "code.replace": lambda: helper.__code__.replace(co_name="other"),
    "FunctionType": lambda: types.FunctionType(helper.__code__, {}),
    "__code__ set": lambda: setattr(helper, "__code__", (lambda: 2).__code__),
    "marshal": lambda: __import__("marshal").loads(__import__("marshal").dumps(helper.__code__)),
    "frames": lambda: sys._current_frames(),
    "written module": lambda: __import__("written_mod"),
    "extension": ext,
    "spec from file": spec_file,
    "exec in a thread": lambda: in_thread(lambda: exec("z = 3", {})),
}
HONEST = {
    "dataclass": lambda: dataclasses.make_dataclass("A", ["a", "b"])(1, 2),
    "@dataclass": lambda: dataclasses.dataclass(type("E", (), {"__annotations__": {"a": int}}))(1),
    "string annotation": lambda: typing.get_type_hints(
        type("F", (), {"__annotations__": {"a": "typing.Optional[int]"}}), {"typing": typing}
    ),
    "namedtuple": lambda: collections.namedtuple("P", "a b")(1, 2),
    "installed module": lambda: __import__("json.tool"),
    "torch": lambda: torch.softmax(torch.randn(3, 3), dim=-1),
    "thread": lambda: in_thread(lambda: torch.ones(2).sum()),
}

def tried(cases):
    found = {}
    for name, fn in cases.items():
        try:
            fn()
            found[name] = "ran"
        except kernel_guard.Refused as err:
            found[name] = "refused: " + str(err)
        except Exception as err:
            found[name] = f"error: {type(err).__name__}: {err}"
        sys.modules.pop("written_mod", None)
    return found

before = tried(HOSTILE)
census_before = kernel_guard.notebook_threads()
answering.guard()
after, honest = tried(HOSTILE), tried(HONEST)
stop = threading.Event()
def work():  # the notebook's own code, waiting
    stop.wait()
threads = [threading.Thread(target=work, name="notebook-worker"),
           threading.Thread(target=stop.wait, name="library-wait")]  # a library's own wait: not the notebook's code
for t in threads:
    t.start()
time.sleep(0.2)
running = kernel_guard.notebook_threads()
stop.set()
for t in threads:
    t.join()
trusted = {name: kernel_guard.trusted(path) for name, path in (
    ("torch", torch.__file__), ("json", json.__file__), ("llm_lab", kernel_guard.__file__),
    ("written", os.path.abspath("written_mod.py")))}
print(json.dumps({"trusted": trusted, "before": before, "after": after, "honest": honest,
                  "census_before": census_before, "running": running, "ended": kernel_guard.notebook_threads()}))
"""

HOSTILE = [
    "eval", "exec", "compile", "type hints", "dataclass field", "dataclass mapping", "pickle", "ctypes", "gc",
    "code.replace", "FunctionType", "__code__ set", "marshal", "frames", "written module", "extension",
    "spec from file", "exec in a thread",
]  # fmt: skip
HONEST = ["dataclass", "@dataclass", "string annotation", "namedtuple", "installed module", "torch", "thread"]


def assert_route_held(probe: dict, name: str) -> None:
    """The route ``name`` ran before the guard (the control; a crafted dataclass field name is compiled into
    dataclasses' text, a SyntaxError there) and was refused after."""
    ran = ("ran", "error: SyntaxError") if name.startswith("dataclass") else ("ran",)
    assert probe["before"][name].startswith(ran), probe["before"][name]
    assert probe["after"][name].startswith("refused: the graded kernel refused"), probe["after"][name]
    assert set(probe["after"]) == set(HOSTILE)
