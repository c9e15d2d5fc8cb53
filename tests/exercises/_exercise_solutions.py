"""Solutions and helpers the exercise solutions and tests of several notebooks share (each notebook's own live in
tests/exercises/solutions_exNN_*.py, found through the registry by tests/exercises/_exercise_tables.py)."""

import torch
import torch.nn.functional as F
from torch import nn

NEG_INF = float("-inf")


def dropout(x, p, training=True):
    if not training or p == 0:
        return x
    keep = torch.rand_like(x) >= p
    return x * keep / (1 - p)


def with_mistake(base, mistake):
    return type(base.__name__, (base,), {"mistake": mistake})


def _triu(t, d):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), d)


# ---- attention of 04 (one head) and 05 (multi-head) with switches; dropout modules that get it wrong ----------


class Flex(nn.Module):
    """Single-head (num_heads=None, notebook 04) or multi-head (05) attention; class attributes choose how.

    place: where dropout acts ("weights", "context", "x", "after" out_proj, "none"); rate: a hard-coded p
    (None: the argument); drop: a factory p -> dropout module; sdpa: F.scaled_dot_product_attention;
    f64: scores and softmax in float64; bias: (query, key, value, out_proj) biases.
    """

    place, rate, drop, sdpa, f64, bias = "weights", None, None, False, False, (False, False, False, True)

    def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
        super().__init__()
        self.nh = num_heads or 1
        self.hd, self.d_out, self.multi = d_out // self.nh, d_out, num_heads is not None
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=b) for b in self.bias[:3])
        if self.multi:
            self.out_proj = nn.Linear(d_out, d_out, bias=self.bias[3])
        self.p = dropout if self.rate is None else self.rate
        self.dropout = self.drop(self.p) if self.drop else nn.Dropout(self.p)

    def forward(self, x):
        b, t, _ = x.shape
        if self.place == "x":
            x = self.dropout(x)
        q, k, v = (
            layer(x).view(b, t, self.nh, self.hd).transpose(1, 2) for layer in (self.W_query, self.W_key, self.W_value)
        )
        if self.sdpa:
            c = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.p if self.training else 0.0)
        else:
            s = q @ k.transpose(-2, -1)
            s = s.double() if self.f64 else s
            s = torch.where(_triu(t, 1), torch.tensor(NEG_INF, dtype=s.dtype), s)  # torch.where, not masked_fill
            w = torch.softmax(s / self.hd**0.5, dim=-1)
            w = self.dropout(w) if self.place == "weights" else w
            c = (w @ v.to(w.dtype)).float()
        c = c.transpose(1, 2).reshape(b, t, self.d_out)
        c = self.dropout(c) if self.place == "context" else c
        if not self.multi:
            return c
        out = self.out_proj(c)
        return self.dropout(out) if self.place == "after" else out


def flex(name="Mine", **attrs):
    return type(name, (Flex,), {k: staticmethod(v) if k == "drop" else v for k, v in attrs.items()})


class NoRescale(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, w):
        return w * (torch.rand_like(w) >= self.p) if self.training else w


class SharedMask(NoRescale):
    """One mask for the whole batch (keepdim over dim 0) or for all heads (dim 1)."""

    dim = 0

    def forward(self, w):
        if not self.training:
            return w
        shape = list(w.shape)
        shape[self.dim] = 1
        return w * (torch.rand(shape) >= self.p) / (1 - self.p)


class SharedHeads(SharedMask):
    dim = 1


# ---- not implemented: the stubs a notebook hands out -----------------------------------------------------------


def stub(*args, **kwargs):
    raise NotImplementedError()


class StubModule(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError()
