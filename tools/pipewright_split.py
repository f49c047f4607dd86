#!/usr/bin/python3
"""pipewright-split: turn a PyTorch model into the TorchScript nn.Sequential Pipewright trains.

  pipewright-split MODULE:FACTORY --input 3,224,224 -o model.pt [--cuts auto|N|NAME,NAME...]
                   [--kwargs JSON] [--dtype float32|int64] [--batch 2] [--seed 0]

MODULE is an importable module (torchvision.models) or a .py file; FACTORY a callable in it that
returns the nn.Module (called with --kwargs after torch.manual_seed(--seed)). torch.fx traces the
model's forward; a cut point is a place in the traced graph where exactly one tensor crosses (a
skip connection, a shape, or a parameter used on both sides rules a place out). Each child of the
written Sequential is the code between two chosen cuts: the layers the planner moves between stages.
  --cuts auto   every cut point (the finest split)
  --cuts N      N children, grouping the finest split so their measured forward times are balanced
  --cuts A,B    cut after module (or traced node) A and after B; where several tensors cross there
                (a skip connection), they travel packed into one (floating tensors of one dtype with
                the batch first: flattened per sample, concatenated; the next child unpacks them);
                otherwise refused, naming what crosses and why
Exit status: 0 written; 2 usage error, a model that cannot be traced or scripted, or no valid cut
(the message names the module and the reason); 1 the written model disagrees with the original.
"""
import argparse
import collections
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time

import torch
import torch.fx as fx
import torch.nn as nn
from torch.fx.passes.shape_prop import ShapeProp


class SplitError(Exception):
    """A refusal the user can act on: printed as is, exit 2."""


def load_model(spec, kwargs, seed):
    module_name, sep, factory_name = spec.rpartition(":")
    if not sep or not module_name or not factory_name:
        raise SplitError(f"MODEL: expected MODULE:FACTORY (e.g. torchvision.models:resnet50), got {spec!r}")
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            path = os.path.abspath(module_name)
            loader_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
            if loader_spec is None or not os.path.exists(path):
                raise SplitError(f"MODEL: no such file {module_name}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.path.insert(0, os.path.dirname(path))
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except SplitError:
        raise
    except Exception as e:  # any import failure is the user's module's
        raise SplitError(f"MODEL: cannot import {module_name}: {type(e).__name__}: {e}")
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise SplitError(f"MODEL: {module_name} has no callable {factory_name!r}")
    torch.manual_seed(seed)
    try:
        model = factory(**kwargs)
    except Exception as e:
        raise SplitError(f"MODEL: {spec}(**{kwargs}) failed: {type(e).__name__}: {e}")
    if not isinstance(model, nn.Module):
        raise SplitError(f"MODEL: {spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model


class _Tracer(fx.Tracer):
    """fx's tracer, keeping the modules in `leaves` whole, and noting the innermost module whose
    forward failed to trace."""

    def __init__(self, leaves):
        super().__init__()
        self.leaves, self.stack, self.failed = leaves, [], None

    def is_leaf_module(self, m, qualname):
        return qualname in self.leaves or super().is_leaf_module(m, qualname)

    def call_module(self, m, forward, args, kwargs):
        self.stack.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            if self.failed is None:
                self.failed = self.stack[-1]
            raise
        finally:
            self.stack.pop()


def trace(model, name):
    """The model's forward as an fx graph. Arguments after the first must have defaults: they are
    fixed at their defaults (a GPT's `targets=None`), since a stage takes one tensor. A submodule
    fx cannot trace through (`b, t, c = x.shape`) is kept whole, as one step of the graph; only the
    model's own forward must trace."""
    params = list(inspect.signature(model.forward).parameters.values())
    if not params:
        raise SplitError(f"{name}: forward takes no input")
    fixed = {}
    for p in params[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is inspect.Parameter.empty:
            raise SplitError(f"{name}: forward has a second input {p.name!r} without a default; "
                             "a pipeline stage takes one tensor")
        fixed[p.name] = p.default
    leaves = set()
    while True:
        tracer = _Tracer(leaves)
        try:
            graph = tracer.trace(model, concrete_args=fixed or None)
            break
        except Exception as e:
            if tracer.failed is None or tracer.failed in leaves:
                raise SplitError(f"{name}: torch.fx cannot trace its forward ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0]}); control flow on tensor values must move into a submodule")
            leaves.add(tracer.failed)
    gm = fx.GraphModule(tracer.root, graph, type(model).__name__)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def state_ids(gm, node):
    """Ids of the parameters and buffers a node uses: a stateful tensor used on both sides of a cut
    (tied weights, a module called twice) would be duplicated by the split."""
    if node.op == "call_module":
        m = gm.get_submodule(node.target)
        return {id(t) for t in list(m.parameters()) + list(m.buffers())}
    if node.op == "get_attr":
        t = _attr(gm, node.target)
        return {id(t)} if isinstance(t, torch.Tensor) else set()
    return set()


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class Graph:
    """The traced graph as an ordered list of compute nodes with, for every place between two of
    them, what crosses it."""

    def __init__(self, gm, name, batch):
        self.gm, self.name, self.batch = gm, name, batch
        nodes = list(gm.graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        self.input = placeholders[0]
        self.output = next(n for n in nodes if n.op == "output")
        if not isinstance(self.output.args[0], fx.Node):
            raise SplitError(f"{name}: forward returns {type(self.output.args[0]).__name__}, not one tensor; "
                             "the engine trains on one tensor of logits")
        # get_attr nodes have no place: each child copies the ones it uses.
        self.compute = [n for n in nodes if n.op in ("call_module", "call_function", "call_method")]
        self.pos = {n: i for i, n in enumerate(self.compute)}
        self.pos[self.input] = -1
        self.pos[self.output] = len(self.compute)
        self._tied = self._tied_spans()

    def _tied_spans(self):
        """For each stateful tensor used by several nodes: (first, last) position and a name."""
        seen = {}
        for n in self.gm.graph.nodes:
            for i in state_ids(self.gm, n):
                users = [self.pos[u] for u in n.users] if n.op == "get_attr" else [self.pos[n]]
                label = n.target
                lo, hi, first_label = seen.get(i, (min(users), max(users), label))
                seen[i] = (min(lo, *users), max(hi, *users), first_label)
        return [(lo, hi, label) for lo, hi, label in seen.values() if lo < hi]

    def crossing(self, i):
        """Values made at or before compute node i and used after it."""
        out = []
        for n in [self.input] + self.compute[: i + 1]:
            if any(self.pos[u] > i for u in n.users):
                out.append(n)
        return out

    def why_not(self, i, values, tuples=False):
        """Why a cut after compute node i is not valid, or None. `values`: node -> example value.
        With `tuples`, several crossing tensors are valid where they can be packed into one
        (packing_problem)."""
        cross = self.crossing(i)
        if len(cross) != 1:
            names = ", ".join(f"'{_label(n)}'" for n in cross)
            why = (f"{len(cross)} values cross there ({names}): a skip connection or a value computed "
                   "early and used later")
            if not tuples:
                return why + "; a stage boundary carries one tensor"
            problem = packing_problem(cross, values, self.batch)
            if problem:
                return f"{why}, and they cannot travel as one tensor: {problem}"
        elif not isinstance(values.get(cross[0]), torch.Tensor):
            return f"the value crossing there ('{_label(cross[0])}') is a {type(values.get(cross[0])).__name__}, not a tensor"
        for lo, hi, label in self._tied:
            if lo <= i < hi:
                return f"parameter or buffer of '{label}' is used on both sides (tied weights or a module called twice)"
        return None


def packing_problem(nodes, values, batch):
    """Why the tensors `nodes` cannot cross a cut packed into one, or None. The engine sends one
    tensor per boundary (every schedule, recompute and swap included), so a tuple crosses as the
    concatenation of its members flattened per sample: that needs floating tensors of one dtype,
    each with the batch as its first dimension."""
    first = None
    for n in nodes:
        v = values.get(n)
        if not isinstance(v, torch.Tensor):
            return f"'{_label(n)}' is a {type(v).__name__}, not a tensor"
        if not v.is_floating_point():
            return f"'{_label(n)}' is {str(v.dtype).replace('torch.', '')}, not floating point (no gradient to carry)"
        if first is None:
            first = v
        if v.dtype != first.dtype:
            return f"'{_label(n)}' is {v.dtype} beside {first.dtype}"
        if v.dim() == 0 or v.shape[0] != batch or v[0].numel() == 0:
            return (f"'{_label(n)}' has shape {list(v.shape)}: not one row per sample of the batch ({batch}), "
                    "as a value made from the input's shape alone (a mask) is")
    return None


def _label(node):
    return node.target if node.op == "call_module" else node.name


def example_values(gm, example):
    """Every node's value on the example input (eval mode, no grad: the model's state and its
    batch-norm statistics stay as the factory made them)."""
    values = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            values[n] = super().run_node(n)
            return values[n]

    was = gm.training
    gm.eval()
    with torch.no_grad():
        Recorder(gm).run(example)
    gm.train(was)
    return values


def make_child(g, nodes, inputs, outputs, values):
    """The compute nodes `nodes` as a module taking the value of `inputs` and returning that of
    `outputs` (lists of nodes): one tensor each where one crosses, else the members of the tuple
    packed into one (packing_problem): flattened per sample and concatenated in crossing order,
    unpacked by the next child with narrow and reshape. Autograd carries each member's gradient
    back through the same view."""
    graph = fx.Graph()
    x = graph.placeholder("x")
    env = {}
    if len(inputs) == 1:
        env[inputs[0]] = x
    else:
        offset = 0
        for n in inputs:
            shape = list(values[n].shape[1:])
            size = values[n][0].numel()
            part = graph.call_method("narrow", (x, 1, offset, size))
            # Contiguous, as a tensor received alone is: the kernels that follow sum in the
            # same order as in the unsplit model.
            env[n] = graph.call_method("contiguous", (graph.call_method("reshape", (part, [-1] + shape)),))
            offset += size

    def arg(n):
        if n not in env:
            assert n.op == "get_attr", f"{n} used outside its child"
            env[n] = graph.node_copy(n)
        return env[n]

    for n in nodes:
        env[n] = graph.node_copy(n, arg)
    if len(outputs) == 1:
        graph.output(env[outputs[0]])
    else:
        # Each member's gradient comes back as a slice of the packed one (strided); times one
        # (exact) hands the member's own backward a contiguous copy, as a tensor sent alone gets,
        # so its kernels sum in the same order as in the unsplit model.
        flat = [graph.call_method("mul", (graph.call_method("reshape", (env[n], [-1, values[n][0].numel()])), 1.0))
                for n in outputs]
        graph.output(graph.call_function(torch.cat, (flat, 1)))
    return fx.GraphModule(g.gm, graph)


def packed_value(nodes, values):
    """The value a child receives for `nodes` (make_child's packing)."""
    if len(nodes) == 1:
        return values[nodes[0]]
    return torch.cat([values[n].reshape(values[n].shape[0], -1) for n in nodes], 1)


def child_name(nodes, used):
    mods = [n.target.split(".") for n in nodes if n.op == "call_module"]
    common = []
    if mods:
        for parts in zip(*mods):
            if len(set(parts)) != 1:
                break
            common.append(parts[0])
    if common:
        base = "_".join(common)
    elif len(mods) > 1:
        base = "_".join(mods[0]) + "_to_" + "_".join(mods[-1])
    else:
        base = nodes[0].name if len(nodes) == 1 else f"{nodes[0].name}_to_{nodes[-1].name}"
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    if not base or base[0].isdigit():
        base = "l_" + base
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def resolve_named_cuts(g, names, values):
    """Positions after the last node of each named module (or the named traced node)."""
    cuts = []
    for want in names:
        hits = [i for i, n in enumerate(g.compute)
                if n.name == want or (n.op == "call_module" and (n.target == want or n.target.startswith(want + ".")))]
        if not hits:
            raise SplitError(f"--cuts: {g.name} has no module or traced node named {want!r}")
        i = max(hits)
        if i == len(g.compute) - 1:
            raise SplitError(f"--cuts: {want!r} is the model's last step; nothing follows it to cut off")
        # The module's own epilogue (a residual add written in the parent's forward) may follow
        # its last call: cut at the first place before the next module runs where one tensor
        # crosses, else where the crossing tensors can travel packed as one (a skip connection).
        end = next((j for j in range(i + 1, len(g.compute)) if g.compute[j].op == "call_module"), len(g.compute) - 1)
        at = next((j for j in range(i, end) if g.why_not(j, values) is None), None)
        if at is None:
            at = next((j for j in range(i, end) if g.why_not(j, values, tuples=True) is None), None)
        if at is None:
            raise SplitError(f"--cuts: cannot cut {g.name} after {want!r}: {g.why_not(i, values, tuples=True)}")
        cuts.append(at)
    if cuts != sorted(set(cuts)):
        raise SplitError("--cuts: names must be in forward order, each once")
    return cuts


def balanced_groups(segments, times, n):
    """Split consecutive segments into n groups minimising the largest group time (exact DP)."""
    k = len(segments)
    prefix = [0.0]
    for t in times:
        prefix.append(prefix[-1] + t)
    inf = float("inf")
    best = [[inf] * (k + 1) for _ in range(n + 1)]
    choice = [[0] * (k + 1) for _ in range(n + 1)]
    best[0][0] = 0.0
    for g in range(1, n + 1):
        for j in range(g, k + 1):
            for i in range(g - 1, j):
                v = max(best[g - 1][i], prefix[j] - prefix[i])
                if v < best[g][j]:
                    best[g][j], choice[g][j] = v, i
    bounds, j = [], k
    for g in range(n, 0, -1):
        i = choice[g][j]
        bounds.append((i, j))
        j = i
    return [sum((segments[s] for s in range(a, b)), []) for a, b in reversed(bounds)]


def forward_ms(module, x, repeats=3):
    module.eval()
    with torch.no_grad():
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            module(x)
            best = min(best, time.perf_counter() - t0)
    return best * 1e3


def out_of_place(model):
    """ReLU(inplace=True) and the like write into their input; a child's input is the tensor a
    stage received, which autograd must keep (a leaf that requires grad): the same result, computed
    out of place."""
    for m in model.modules():
        if getattr(m, "inplace", False) is True:
            m.inplace = False


def split(model, name, example, cuts_arg):
    out_of_place(model)
    gm = trace(model, name)
    g = Graph(gm, name, example.shape[0])
    values = example_values(gm, example)
    last = len(g.compute) - 1
    valid = [i for i in range(last) if g.why_not(i, values) is None]
    if cuts_arg == "auto" or cuts_arg.isdigit():
        if not valid:
            raise SplitError(f"{name}: no valid cut: nowhere in its forward does exactly one tensor cross "
                             "(every place carries a skip connection or shared state)")
        bounds = valid
    else:
        bounds = resolve_named_cuts(g, [s.strip() for s in cuts_arg.split(",") if s.strip()], values)
    edges = [-1] + bounds + [last]
    segments = [g.compute[a + 1: b + 1] for a, b in zip(edges, edges[1:])]
    inputs = [[g.input]] + [g.crossing(b) for b in bounds]
    outputs = inputs[1:] + [[g.output.args[0]]]
    if cuts_arg.isdigit():
        n = int(cuts_arg)
        if not 1 <= n <= len(segments):
            raise SplitError(f"--cuts: {name} splits into at most {len(segments)} children, asked for {n}")
        times = [forward_ms(make_child(g, s, i, o, values), example if i == [g.input] else packed_value(i, values))
                 for s, i, o in zip(segments, inputs, outputs)]
        groups = balanced_groups([[k] for k in range(len(segments))], times, n)
        segments = [sum((segments[k] for k in grp), []) for grp in groups]
        inputs = [inputs[grp[0]] for grp in groups]
        outputs = [outputs[grp[-1]] for grp in groups]
    used = set()
    children = collections.OrderedDict()
    for s, i, o in zip(segments, inputs, outputs):
        children[child_name(s, used)] = make_child(g, s, i, o, values)
    seq = nn.Sequential(children)
    seq.train(model.training)
    return seq, values


def script(seq, name):
    try:
        return torch.jit.script(seq)
    except Exception as e:
        for child_name_, child in seq.named_children():
            try:
                torch.jit.script(child)
            except Exception as ce:
                raise SplitError(f"{name}: child '{child_name_}' cannot be scripted by TorchScript "
                                 f"({type(ce).__name__}: {str(ce).splitlines()[0]}):\n{child.code}")
        raise SplitError(f"{name}: the Sequential cannot be scripted: {e}")


def check_same(model, scripted, example, name):
    """The written model must compute what the original does (eval mode: no dropout draws)."""
    was = model.training
    model.eval()
    scripted.eval()
    with torch.no_grad():
        want, got = model(example), scripted(example)
    model.train(was)
    scripted.train(was)
    diff = (want - got).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    if want.shape != got.shape or diff > 1e-5 * scale:
        print(f"pipewright-split: {name}: the split model's output differs from the original's "
              f"(max abs diff {diff:.3g})", file=sys.stderr)
        sys.exit(1)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="pipewright-split", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model", metavar="MODULE:FACTORY")
    ap.add_argument("--input", required=True, help="one sample's shape without the batch dimension, e.g. 3,224,224")
    ap.add_argument("-o", "--output", required=True, help="the TorchScript file to write")
    ap.add_argument("--cuts", default="auto", help="auto (default), N children, or module names to cut after")
    ap.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for FACTORY")
    ap.add_argument("--dtype", default="float32", choices=["float32", "int64"], help="the input's dtype")
    ap.add_argument("--batch", type=int, default=2, help="example batch size for tracing and checking (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed before FACTORY (default 0)")
    a = ap.parse_args(argv)
    try:
        a.shape = [int(s) for s in a.input.split(",")]
        if not a.shape or min(a.shape) < 1:
            raise ValueError
    except ValueError:
        raise SplitError(f"--input: expected positive integers separated by commas (3,224,224), got {a.input!r}")
    try:
        a.kwargs = json.loads(a.kwargs)
        if not isinstance(a.kwargs, dict):
            raise ValueError
    except ValueError:
        raise SplitError(f"--kwargs: expected a JSON object, got {a.kwargs!r}")
    if a.batch < 1:
        raise SplitError(f"--batch: must be at least 1, got {a.batch}")
    if a.cuts != "auto" and a.cuts.isdigit() and int(a.cuts) < 1:
        raise SplitError("--cuts: N must be at least 1")
    return a


def main(argv=None):
    try:
        a = parse_args(sys.argv[1:] if argv is None else argv)
        model = load_model(a.model, a.kwargs, a.seed)
        name = f"{a.model} ({type(model).__name__})"
        shape = [a.batch] + a.shape
        example = torch.zeros(shape, dtype=torch.int64) if a.dtype == "int64" else torch.randn(shape)
        try:
            with torch.no_grad():
                model.eval()
                model(example)
        except Exception as e:
            raise SplitError(f"--input: {name} rejects an input of shape {shape} ({a.dtype}): "
                             f"{type(e).__name__}: {str(e).splitlines()[0]}")
        model.train()
        seq, values = split(model, name, example, a.cuts)
        scripted = script(seq, name)
        check_same(model, scripted, example, name)
        scripted.save(a.output)
    except SplitError as e:
        print(f"pipewright-split: {e}", file=sys.stderr)
        return 2
    x = example
    print(f"{a.output}: {len(seq)} children of {name}")
    with torch.no_grad():
        seq.eval()
        for cname, child in seq.named_children():
            x = child(x)
            params = sum(p.numel() for p in child.parameters())
            print(f"  {cname:<24} params {params:>11,}  output {list(x.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
