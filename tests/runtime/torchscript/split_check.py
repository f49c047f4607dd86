"""pipewright-split as users call it: the written Sequential computes the original model's forward
and gradients, and refusals exit 2 naming the module and the reason.

usage: split_check.py SPLITTER   (run with Debian's python3, which has torch and torchvision)
"""
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import split_models  # noqa: E402

SPLITTER = sys.argv[1]
MODELS = os.path.join(HERE, "split_models.py")
failures = []


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def run(args):
    p = subprocess.run([sys.executable, SPLITTER] + args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def original(factory, kwargs):
    torch.manual_seed(0)  # the splitter's default --seed
    return factory(**kwargs)


def compare(label, model, path, x):
    """Forward and gradients of every parameter (and of a float input) on x, training mode."""
    split = torch.jit.load(path)
    split.train()
    model.train()
    theirs = dict(model.named_parameters())
    ours = {}
    for name, p in split.named_parameters():
        key = name.split(".", 1)[1]  # '<child>.<the original's path>'
        if key in ours:
            fail(f"{label}: parameter {key} appears twice in the split model")
        ours[key] = p
    if set(ours) != set(theirs):
        fail(f"{label}: parameters differ: only split {sorted(set(ours) - set(theirs))[:5]}, "
             f"only original {sorted(set(theirs) - set(ours))[:5]}")
        return
    for k in theirs:
        if not torch.equal(ours[k], theirs[k]):
            fail(f"{label}: initial value of {k} differs")
            return
    xs = [x.clone().requires_grad_(x.is_floating_point()) for _ in range(2)]
    want, got = model(xs[0]), split(xs[1])
    if want.shape != got.shape:
        fail(f"{label}: output shape {list(got.shape)}, want {list(want.shape)}")
        return
    w = torch.randn(want.shape, generator=torch.Generator().manual_seed(3))
    (want * w).sum().backward()
    (got * w).sum().backward()
    worst = ((got - want).abs().max() / want.abs().max().clamp(min=1)).item()
    where = "output"
    pairs = [(theirs[k].grad, ours[k].grad, k) for k in theirs]
    if x.is_floating_point():
        pairs.append((xs[0].grad, xs[1].grad, "input"))
    for a, b, k in pairs:
        if a is None or b is None:
            fail(f"{label}: no gradient for {k}")
            return
        d = ((a - b).abs().max() / a.abs().max().clamp(min=1)).item()
        if d > worst:
            worst, where = d, k
    print(f"{label}: {len(list(split.children()))} children, {len(pairs)} gradients; "
          f"largest relative difference {worst:.2e} ({where})")
    if worst > 1e-6:
        fail(f"{label}: differs from the original by {worst:.2e} at {where}")


def check_model(label, spec, factory, kwargs, shape, dtype, cuts, batch=2):
    import json
    out = os.path.join(tmp, label + ".pt")
    args = [spec, "--input", ",".join(map(str, shape)), "-o", out, "--cuts", cuts, "--kwargs", json.dumps(kwargs)]
    if dtype == "int64":
        args += ["--dtype", "int64"]
    rc, text = run(args)
    if rc != 0:
        fail(f"{label}: pipewright-split exited {rc}: {text}")
        return
    g = torch.Generator().manual_seed(1)
    x = (torch.randint(0, split_models.VOCAB, [batch] + shape, generator=g) if dtype == "int64"
         else torch.randn([batch] + shape, generator=g))
    compare(label, original(factory, kwargs), out, x)


def check_refusal(label, args, *needles):
    out = os.path.join(tmp, "refused.pt")
    rc, text = run(args + ["-o", out])
    if rc != 2:
        fail(f"{label}: exit {rc}, want 2: {text}")
    for n in needles:
        if n not in text:
            fail(f"{label}: message lacks {n!r}: {text}")
    if os.path.exists(out):
        fail(f"{label}: a refused split wrote its output")
        os.remove(out)
    print(f"{label}: refused: {text.strip().splitlines()[-1]}")


with tempfile.TemporaryDirectory() as tmp:
    import torchvision.models as tv

    # The real torchvision architectures at small images (VGG-16 without dropout: draws would differ).
    check_model("vgg16", "torchvision.models:vgg16", tv.vgg16, {"num_classes": 10, "dropout": 0.0},
                [3, 32, 32], "float32", "auto")
    check_model("resnet50", "torchvision.models:resnet50", tv.resnet50, {"num_classes": 10}, [3, 64, 64],
                "float32", "auto")
    check_model("resnet50-4", "torchvision.models:resnet50", tv.resnet50, {"num_classes": 10}, [3, 32, 32],
                "float32", "4")
    check_model("resnet50-named", "torchvision.models:resnet50", tv.resnet50, {"num_classes": 10}, [3, 32, 32],
                "float32", "layer1,layer2,layer3")
    check_model("gpt", MODELS + ":gpt", split_models.gpt, {}, [split_models.SEQ], "int64", "auto")
    check_model("gpt-2", MODELS + ":gpt", split_models.gpt, {}, [split_models.SEQ], "int64", "blocks.0")
    # A skip connection: the split cuts around it by itself ...
    check_model("skip", MODELS + ":skip", split_models.skip, {}, [4, 4], "float32", "auto")
    # ... and a requested cut across it carries both tensors packed into one (a tuple boundary),
    # also at two consecutive cuts, and inside ResNet-50's first bottleneck (batch norm in training
    # mode on both sides of the cut).
    check_model("skip-across-cut", MODELS + ":skip", split_models.skip, {}, [4, 4], "float32", "block.0")
    check_model("skip-three-cuts", MODELS + ":skip", split_models.skip, {}, [4, 4], "float32",
                "stem,block.0,block.1")
    check_model("resnet50-inside-block", "torchvision.models:resnet50", tv.resnet50, {"num_classes": 10},
                [3, 32, 32], "float32", "layer1.0.conv1,layer1.0.bn2,layer2")
    # A cut after the whole block falls after the residual add, where one tensor crosses.
    check_model("skip-named", MODELS + ":skip", split_models.skip, {}, [4, 4], "float32", "block")
    # What cannot travel packed is refused, naming it: a mask made from the input's shape.
    check_refusal("mask-across-cut", [MODELS + ":masked", "--input", "16", "--cuts", "a"], "Masked",
                  "cannot cut", "after 'a'", "2 values cross there", "not one row per sample")
    check_refusal("no-valid-cut", [MODELS + ":all_skip", "--input", "16"], "AllSkip", "no valid cut")
    check_refusal("tied-weights", [MODELS + ":tied_gpt", "--input", "16", "--dtype", "int64", "--cuts", "ln_f"],
                  "GPT", "after 'ln_f'", "tied weights")
    check_refusal("untraceable", [MODELS + ":data_dependent", "--input", "16"], "DataDependent",
                  "torch.fx cannot trace")
    check_refusal("bad-input", [MODELS + ":skip", "--input", "3,3"], "--input", "Skip", "rejects an input")
    check_refusal("bad-factory", [MODELS + ":nothing", "--input", "16"], "has no callable 'nothing'")
    check_refusal("bad-cut-name", [MODELS + ":skip", "--input", "4,4", "--cuts", "nope"], "no module or traced node named 'nope'")
    check_refusal("too-many-cuts", [MODELS + ":skip", "--input", "4,4", "--cuts", "99"], "asked for 99")

print(f"split_check: {'ok' if not failures else f'{len(failures)} failures'}")
sys.exit(1 if failures else 0)
