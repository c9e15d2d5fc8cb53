"""Nothing a kernel sends makes the grader allocate past a fixed budget (tools/teaching/grader/kernel.py and the
wire format, llm_lab/exercises/grading/wire.py): tensor sizes are checked from their shapes (meta tensors too)
before anything is built, a reply's text is counted before it is parsed, comm (widget) messages and display
updates are dropped, and output is capped per cell and per submission. The hostile class
(tests/tools/teaching/grader/test_grade_hostile.py) sends the same through a real sandboxed kernel."""

from __future__ import annotations

import json

import nbformat
import pytest
import torch
from _remote_loopback import loopback
from torch import nn

from llm_lab import exercises as ex
from llm_lab.exercises.grading import answering, proxies, wire
from tools.teaching.grader import kernel as grader_kernel


class Big(nn.Module):
    """A 2 GiB layer that costs nothing where it is built (on the meta device)."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.W = nn.Linear(23170, 23170, device="meta")

    def forward(self, x):
        return x


def test_a_meta_tensor_is_sized_before_it_is_built():
    with pytest.raises(wire.WireError, match="bytes"):
        wire.decode(wire.encode(torch.empty(23170, 23170, device="meta")))


def test_a_meta_layer_handed_back_costs_the_grader_nothing(monkeypatch):
    built = []
    real_init = nn.Linear.__init__

    def init(self, in_features, out_features, *args, device=None, **kwargs):
        if in_features * out_features > wire.MAX_BYTES and str(device) != "meta":
            built.append((in_features, out_features))  # what the grader would have allocated: refused here
            raise MemoryError("the test refuses a 2 GiB layer in the grader")
        real_init(self, in_features, out_features, *args, device=device, **kwargs)

    answering.capture("causal_mask", lambda: lambda n: Big())  # built in "the kernel", on the meta device
    monkeypatch.setattr(nn.Linear, "__init__", init)
    link = loopback()
    link.exercise = "causal_mask"
    try:
        result = ex.grade("causal_mask", link.lookup("causal_mask"), timeout=60)
    except MemoryError:
        result = None
    assert built == [] and result is not None and not result.passed  # was nn.Linear(23170, 23170) in the grader


def test_a_small_meta_layer_stays_meta_and_is_named():
    class MetaModule(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
            super().__init__()
            self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, device="meta") for _ in range(3))

        def forward(self, x):
            return x

    link = loopback()
    answering.capture("causal_attention", lambda: MetaModule)
    link.exercise = "causal_attention"
    result = ex.grade("causal_attention", link.lookup("causal_attention"), timeout=60)
    assert (result.status, result.hint) == ("fail", "meta_tensor")


def test_all_tensors_of_one_reply_share_one_budget():
    many = [torch.empty(wire.MAX_BYTES // 4, device="meta") for _ in range(5)]  # 5 x 64 MiB, each allowed
    with pytest.raises(wire.WireError, match="more than"):
        wire.decode(wire.encode(many))


@pytest.mark.parametrize(
    "text", [b"[" + b"[]," * 300_000 + b"[]]", b"[" * 5000 + b"]" * 5000, b"x" * (wire.MAX_REPLY_BYTES + 1)]
)
def test_a_reply_is_counted_before_it_is_parsed(text):
    with pytest.raises(wire.WireError):
        wire.parse(text)


def message(kind: str, content: dict) -> dict:
    return {
        "msg_type": kind,
        "header": {"msg_type": kind},
        "parent_header": {"msg_id": "m"},
        "metadata": {},
        "content": content,
        "buffers": [],
    }


def client(cells: int = 1, max_output: int = 10_000) -> grader_kernel.CappedClient:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("") for _ in range(cells)]
    c = grader_kernel.CappedClient(nb, max_output)
    c.reset_execution_trackers()  # what nbclient does before a run, and before each cell
    c.clear_before_next_output = False
    return c


def test_widget_comm_messages_are_not_kept():
    c = client()
    for i in range(200):
        c.process_message(
            message("comm_msg", {"comm_id": "w", "data": {"state": {f"k{i}": "y" * 10_000}}}), c.nb.cells[0], 0
        )
    assert c.widget_state == {} and c.widget_buffers == {}  # was 2 MB of state, kept for the whole run


def test_display_updates_do_not_replace_counted_output():
    c = client()
    shown = {"data": {"text/plain": "x"}, "metadata": {}, "transient": {"display_id": "d"}}
    c.process_message(message("display_data", shown), c.nb.cells[0], 0)
    big = {"data": {"text/plain": "y" * 1_000_000}, "metadata": {}, "transient": {"display_id": "d"}}
    c.process_message(message("update_display_data", big), c.nb.cells[0], 0)
    assert len(json.dumps(c.nb.cells[0].outputs)) < 1000


def test_output_is_capped_per_submission_and_a_cells_error_is_kept():
    cells = grader_kernel.MAX_TOTAL_CELLS + 10
    c = client(cells)
    for i in range(cells):
        c.process_message(message("stream", {"name": "stdout", "text": "x" * 9_000}), c.nb.cells[i], i)
    kept = sum(len(o.get("text", "")) for cell in c.nb.cells for o in cell.outputs)
    assert kept <= grader_kernel.MAX_TOTAL_CELLS * 10_000
    c.process_message(
        message("error", {"ename": "ValueError", "evalue": "v" * 5000, "traceback": ["t" * 10**6]}),
        c.nb.cells[-1],
        cells - 1,
    )
    assert grader_kernel.cell_error(c.nb.cells[-1]).startswith("ValueError: vvv")


def test_the_grader_receives_no_frame_past_the_cap():
    kc = grader_kernel.CappedKernelClient()
    import zmq

    assert kc.context.getsockopt(zmq.MAXMSGSIZE) == grader_kernel.MAX_FRAME
    socket = kc.context.socket(zmq.SUB)
    assert socket.getsockopt(zmq.MAXMSGSIZE) == grader_kernel.MAX_FRAME
    socket.close()
    kc.context.term()


def _reply_line(nonce: str, value) -> str:
    import base64

    return nonce + base64.b64encode(json.dumps(wire.encode(value)).encode()).decode()


def test_one_reply_is_read_and_a_second_one_is_a_forgery():
    nonce = "LLMLAB-REPLY-0123456789abcdef "
    real = _reply_line(nonce, {"hit": None, "value": 1})
    want = wire.parse(json.dumps(wire.encode({"hit": None, "value": 1})).encode())
    assert grader_kernel.reply_of("learner output\n" + real + "\n", nonce) == want
    forged = _reply_line(nonce, {"hit": None, "value": 2})
    for text in (forged + "\n" + real, real + "\n" + forged):
        with pytest.raises(proxies.RemoteFailed, match="2 times"):
            grader_kernel.reply_of(text, nonce)
    with pytest.raises(proxies.RemoteFailed, match="did not answer"):
        grader_kernel.reply_of("no reply here", nonce)
    # red team 8 (c30c): a learner's audit hook saw the request, printed a reply and stopped the real serve by raising
    for error in ("RuntimeError: stopped", "timeout"):
        with pytest.raises(proxies.RemoteFailed, match="forged"):
            grader_kernel.reply_of(forged + "\n", nonce, error)


def test_the_kernel_takes_the_nonce_out_before_the_learners_code_runs(capsys):
    import base64

    seen = {}

    def spy(request):  # stands in for the learner's call: it sees the request the answering side works on
        seen.update(request)
        return {"value": 0}

    request = {"op": "call", "nonce": "LLMLAB-REPLY-x "}
    original = answering.answer_call
    answering.answer_call = spy
    try:
        answering.serve(base64.b64encode(json.dumps(request).encode()).decode())
    finally:
        answering.answer_call = original
    assert "nonce" not in seen and capsys.readouterr().out.startswith("LLMLAB-REPLY-x ")


class _LazyTensor(torch.Tensor):
    def detach(self):  # what the fourth red team ran after the check: the forbidden call, outside the watch
        raise AssertionError("a subclass's method ran while the reply was encoded")


class _LazyList(list):
    def __getitem__(self, i):
        raise AssertionError("a subclass's method ran while the reply was encoded")


class _LazyInt(int):
    def __abs__(self):
        raise AssertionError("a subclass's method ran while the reply was encoded")


def test_the_wire_runs_no_method_of_a_learners_subclass():
    for value in (torch.ones(2).as_subclass(_LazyTensor), _LazyList([1, 2]), _LazyInt(3), {"k": _LazyInt(1)}):
        encoded = wire.encode(value)  # no AssertionError: never called
        assert "__opaque__" in json.dumps(encoded), encoded


def test_plain_turns_subclasses_into_exact_types_inside_the_check():
    t = answering.plain(torch.ones(2).as_subclass(_LazyTensor))
    assert type(t) is torch.Tensor and t.tolist() == [1.0, 1.0]
    assert answering.plain(_LazyInt(3)) == 3 and type(answering.plain(_LazyInt(3))) is int
    got = answering.plain((_LazyInt(1), [2.5, "x"], {"a": torch.zeros(1).as_subclass(_LazyTensor)}))
    assert type(got) is tuple and type(got[0]) is int and type(got[2]["a"]) is torch.Tensor
    assert wire.encode(got)["__tuple__"][0] == 1
    lazy = _LazyList([1])
    with pytest.raises(AssertionError, match="subclass's method"):  # plain runs them: inside the check
        lazy[0]
    assert answering.plain(lazy) == [1]
