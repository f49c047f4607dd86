"""Our measured profile of torchvision's VGG-16 / ResNet-50 next to PipeDream's published one.

usage: profile_vs_pipedream.py PIPEWRIGHT WORKER MODEL [--image 224] [--micro 2] [--repeats 2]
  MODEL: vgg16 | resnet50 (Debian's python3 with python3-torch and python3-torchvision)

Splits the model with pipewright-split (--cuts auto), measures it with `pipewright profile` on this
machine's CPU, and lines its children up with the nodes of resources/profiles/pipedream/MODEL/graph.txt
(measured by PipeDream on a GPU): a child takes PipeDream's nodes up to the first of the type its own
last step has (a ResNet block ends at its Add, flatten at View). Different hardware, so it compares
shapes, not milliseconds: each layer's share of the model's forward+backward time, and its output
activation bytes per sample. Prints a Markdown table and the Pearson correlations (docs/profiles.md).
"""
import argparse
import json
import operator
import os
import re
import subprocess
import sys
import tempfile

import torch
import torchvision.models as tv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import pipewright_split  # noqa: E402

# PipeDream's profiler names the ops it saw; ours are fx steps.
FUNCTION_TYPES = {operator.add: "Add", operator.iadd: "Add", torch.flatten: "View"}
# Our type -> the PipeDream node types that end the same step. PipeDream's VGG-16 (an older
# torchvision) has no average pool: ours lines up with its zero-cost Size node.
SAME = {"AdaptiveAvgPool2d": {"AvgPool2d", "Size"}}


def last_step_type(child):
    n = [n for n in child.graph.nodes if n.op in ("call_module", "call_function", "call_method")][-1]
    if n.op == "call_module":
        return type(child.get_submodule(n.target)).__name__
    return FUNCTION_TYPES.get(n.target, str(n.target))


def pipedream_nodes(path):
    """(type, fwd+bwd ms, activation bytes) in node order, Input dropped."""
    rows = []
    for line in open(path):
        m = re.match(r"node(\d+) -- (\w+).*forward_compute_time=([\d.]+), backward_compute_time=([\d.]+), "
                     r"activation_size=([\d.]+)", line)
        if m and m.group(2) != "Input":
            rows.append((int(m.group(1)), m.group(2), float(m.group(3)) + float(m.group(4)), float(m.group(5))))
    return [r[1:] for r in sorted(rows)]


def align(types, nodes):
    groups, i = [], 0
    for t in types:
        j = i
        while j < len(nodes) and nodes[j][0] not in SAME.get(t, {t}):
            j += 1
        if j == len(nodes):
            raise SystemExit(f"cannot line up: no PipeDream node of type {t} after node {i}")
        groups.append(nodes[i:j + 1])
        i = j + 1
    if i != len(nodes):
        groups[-1] = groups[-1] + nodes[i:]
    return groups


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a) ** 0.5
    vb = sum((y - mb) ** 2 for y in b) ** 0.5
    return cov / (va * vb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pipewright")
    ap.add_argument("worker")
    ap.add_argument("model", choices=["vgg16", "resnet50"])
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--micro", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = getattr(tv, a.model)()
    example = torch.randn(a.micro, 3, a.image, a.image)
    seq, _ = pipewright_split.split(model, a.model, example, "auto")
    types = [last_step_type(c) for c in seq.children()]
    with tempfile.TemporaryDirectory() as tmp:
        torch.jit.script(seq).save(f"{tmp}/model.pt")
        job = {"name": a.model,
               "model": {"kind": "torchscript", "path": f"{tmp}/model.pt", "input": {"shape": [3, a.image, a.image]},
                         "classes": 1000},
               "data": {"kind": "synthetic", "samples": 64},
               "training": {"optimizer": "sgd", "lr": 0.01, "batch_size": a.micro, "microbatch_size": a.micro},
               "cluster": {"devices": 1, "device": "custom", "memory_gb": 64, "tflops": 0.05}}
        json.dump(job, open(f"{tmp}/job.json", "w"))
        subprocess.run([a.pipewright, "profile", f"{tmp}/job.json", "-o", f"{tmp}/profile.json",
                        "--repeats", str(a.repeats)], check=True, env=dict(os.environ, PW_WORKER=a.worker),
                       stdout=subprocess.DEVNULL)
        ours = json.load(open(f"{tmp}/profile.json"))
    layers = ours["layers"]
    mb = ours.get("microbatch_size", a.micro)
    groups = align(types, pipedream_nodes(os.path.join(ROOT, "resources/profiles/pipedream", a.model, "graph.txt")))
    # PipeDream's minibatch, read from its Input node as docs/profiles.md does (N x 3 x 224 x 224 fp32).
    their_mb = {"vgg16": 128, "resnet50": 128}[a.model]
    our_t = [l["fwd_ms"] + l["bwd_ms"] for l in layers]
    their_t = [sum(n[1] for n in g) for g in groups]
    our_b = [l["output_bytes"] / mb for l in layers]
    their_b = [g[-1][2] / their_mb for g in groups]
    st, tt = sum(our_t), sum(their_t)
    print(f"### {a.model}: {len(layers)} layers (ours: {a.image}x{a.image}, microbatch {mb}, this CPU; "
          f"PipeDream: 224x224, minibatch {their_mb}, its GPU)\n")
    print("| layer | PipeDream nodes | fwd+bwd share, ours | PipeDream | output KiB/sample, ours | PipeDream |")
    print("|---|---|---|---|---|---|")
    for l, g, ot, tt_, ob, tb in zip(layers, groups, our_t, their_t, our_b, their_b):
        print(f"| {l['name']} | {'+'.join(n[0] for n in g)} | {100 * ot / st:.1f}% | {100 * tt_ / tt:.1f}% | "
              f"{ob / 1024:.0f} | {tb / 1024:.0f} |")
    print(f"\nPearson correlation over the {len(layers)} layers: time share {pearson(our_t, their_t):.3f}, "
          f"activation bytes per sample {pearson(our_b, their_b):.3f}")


if __name__ == "__main__":
    main()
