"""Python side of the TorchScript tests (run with Debian's python3-torch).

  make_models.py make DIR    scripts and saves the test models and tensors into DIR
  make_models.py check DIR   loads DIR/trained.pt and compares its outputs on DIR/probe.pt
                             with the ones the C++ side wrote to DIR/cpp_outputs.json
"""
import json
import sys

import torch
import torch.nn as nn


def sequential():
    torch.manual_seed(7)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 24), nn.Tanh(),
                         nn.Linear(24, 12), nn.ReLU(), nn.Linear(12, 4))


def batch_norm():
    torch.manual_seed(5)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 24), nn.BatchNorm1d(24), nn.ReLU(), nn.Linear(24, 4))


def language_model():
    torch.manual_seed(9)
    return nn.Sequential(nn.Embedding(256, 16), nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 256))


class Chain(nn.Module):
    """Children called one after another, declared in another order: accepted."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 4)
        self.flat = nn.Flatten()
        self.body = nn.Linear(16, 8)

    def forward(self, x):
        return self.head(self.body(self.flat(x)))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()
        self.block = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        x = self.flat(x)
        return self.out(x + self.block(x))


class Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()
        self.used = nn.Linear(16, 4)
        self.spare = nn.Linear(4, 4)

    def forward(self, x):
        return self.used(self.flat(x))


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()
        self.square = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(self.square(self.square(self.flat(x))))


def make(d):
    torch.jit.script(sequential()).save(f"{d}/seq.pt")
    torch.jit.script(language_model()).save(f"{d}/lm.pt")
    torch.jit.script(batch_norm()).save(f"{d}/bn.pt")
    torch.jit.script(Chain()).save(f"{d}/chain.pt")
    torch.jit.script(Residual()).save(f"{d}/residual.pt")
    torch.jit.script(Unused()).save(f"{d}/unused.pt")
    torch.jit.script(Twice()).save(f"{d}/twice.pt")
    g = torch.Generator().manual_seed(11)
    x = torch.randn(256, 4, 4, generator=g)
    teacher = torch.randn(16, 4, generator=g)
    y = (x.reshape(256, 16) @ teacher).argmax(1)
    torch.save({"inputs": x, "labels": y, "test_inputs": x[:32].clone(), "test_labels": y[:32].clone()},
               f"{d}/data.pt")
    probe = torch.randn(5, 4, 4, generator=g)
    torch.save({"inputs": probe, "labels": torch.zeros(5, dtype=torch.long)}, f"{d}/probe.pt")


def check(d):
    model = torch.jit.load(f"{d}/trained.pt")
    model.eval()
    probe = torch.load(f"{d}/probe.pt")["inputs"]
    with torch.no_grad():
        out = model(probe)
    want = torch.tensor(json.load(open(f"{d}/cpp_outputs.json")))
    diff = (out - want).abs().max().item()
    print(f"python output vs C++ output: max abs diff {diff:.3g}")
    return 0 if out.shape == want.shape and diff < 1e-5 else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
        sys.exit(0)
    sys.exit(check(sys.argv[2]))
