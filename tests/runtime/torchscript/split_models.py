"""Models written as ordinary nn.Modules, for the splitter's tests (pipewright-split MODULE:FACTORY)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, SEQ, HIDDEN, HEADS = 64, 16, 32, 2


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.heads = HEADS

    def forward(self, x):
        # Unpacking a shape: torch.fx cannot trace this, so the splitter keeps the module whole.
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        # The mask comes from the input's length, in forward, as a GPT computes it.
        mask = torch.ones(t, t, device=x.device).tril()
        att = att.masked_fill(mask == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.attn = CausalSelfAttention()
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token and position embeddings, causal-attention blocks, a head; forward(idx, targets=None)
    as GPTs are written (the splitter fixes targets at its default)."""

    def __init__(self, layers=2, tied=False):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Parameter(torch.randn(SEQ, HIDDEN) * 0.02)
        self.blocks = nn.ModuleList([Block() for _ in range(layers)])
        self.ln_f = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
        if tied:
            self.head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        x = self.wte(idx) + self.wpe[: idx.size(1)]
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is not None:
            return F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits


def gpt():
    return GPT()


def tied_gpt():
    return GPT(tied=True)


class Skip(nn.Module):
    """A residual connection around `block`: a cut inside it (after `block.0`) carries two tensors,
    packed into one."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.block = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 16))
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.stem(x.flatten(1)))
        return self.out(h + self.block(h))


def skip():
    return Skip()


class Masked(nn.Module):
    """A mask made from the input's shape (no batch dimension) used after `b`: a cut after `a`
    cannot carry it packed with the activation."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.c = nn.Linear(16, 4)

    def forward(self, x):
        mask = x.new_ones(x.size(1), x.size(1)).tril()
        return self.c(self.b(self.a(x)) @ mask)


def masked():
    return Masked()


class AllSkip(nn.Module):
    """The input is used at the very end: no place in forward carries one tensor."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        return self.b(self.a(x)) + x


def all_skip():
    return AllSkip()


class DataDependent(nn.Module):
    """Control flow on a tensor's value: torch.fx cannot trace it."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x):
        h = self.a(x)
        if h.sum() > 0:
            return h
        return -h


def data_dependent():
    return DataDependent()
