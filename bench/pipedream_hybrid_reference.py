"""Runs PipeDream's own hierarchical optimizer and prints its plan as JSON, the reference that
Pipewright's `pipedream` planner reproduces (docs/planners.md, "PipeDream's replication").

usage: pipedream_hybrid_reference.py PIPEDREAM_CHECKOUT GRAPH_TXT -n 8 [4 ...] -b BYTES_PER_S [...]
       [--activation_compression_ratio 1] [--table]

PIPEDREAM_CHECKOUT: a checkout of github.com/msr-fiddle/pipedream (commit 7db6a1c was used for the
figures in the docs and tests); its optimizer/optimizer_graph_hierarchical.py and graph/ are imported
unchanged. Nothing of PipeDream is copied here: the two shims below only stand in for packages its
modules import at the top and this use never needs (graphviz draws the graph; numpy only pretty-prints
a matrix), and the module-level options its __main__ block sets are set the same way.

Prints one JSON object: the pipeline time (s, PipeDream's unit) and per stage its nodes, replication
factor, compute time (the reference's own full-precision figure), parameter bytes, and its stage time
(compute + 4 (r - 1) P / (r bandwidth)) / r as the recurrence uses it. For two levels the stages
are those of the innermost level.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import types


def install_shims():
    if "graphviz" not in sys.modules:
        sys.modules["graphviz"] = types.ModuleType("graphviz")
    if "numpy" not in sys.modules:
        np = types.ModuleType("numpy")
        np.array = lambda x: x
        sys.modules["numpy"] = np


def run(checkout, graph_txt, machines, bandwidths, ratio):
    install_shims()
    sys.path.insert(0, checkout)
    sys.path.insert(0, os.path.join(checkout, "optimizer"))
    import optimizer_graph_hierarchical as opt

    # The options its __main__ block sets as module globals (the script's defaults).
    opt.straight_pipeline = False
    opt.use_memory_constraint = False
    opt.use_fewer_machines = False
    opt.memory_size = 16e9
    opt.activation_compression_ratio = ratio

    captured = {}
    original = opt.analyze_partitioning

    def analyze(A, states, start, end, bandwidth, num_machines, *rest):
        splits = original(A, states, start, end, bandwidth, num_machines, *rest)
        captured.setdefault("levels", []).append((A, states, start, end, bandwidth, num_machines, splits))
        return splits

    opt.analyze_partitioning = analyze
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        pipeline_s, dp_s = opt.main(machines, graph_txt, bandwidths, 16e9, False, False, False, ratio, None,
                                    print_configuration=True, verbose=False)
    # The last call analyses the innermost level (main walks levels outermost first).
    A, states, start, end, bandwidth, num_machines, splits = captured["levels"][-1]
    # The replication factors analyze_partitioning printed, walked from A the same way it walks them.
    factors = []
    meta = A[start][end - 1][num_machines - 1]
    while meta[1] is not None:
        factors.append(meta[2])
        meta = A[start][meta[1][0]][meta[1][1]]
    factors.append(meta[2])
    factors.reverse()
    bounds = [start] + list(splits) + [end]
    # Node ids per stage: each state's down-set minus the previous one's.
    gr = opt.graph.Graph.from_str(open(graph_txt).read())

    def downset(state_index):
        if state_index < 0:
            return set()
        ids = set(states[state_index].antichain)
        todo = list(ids)
        while todo:
            n = todo.pop()
            for p in gr.in_edges.get(n, []):
                if p.node_id not in ids:
                    ids.add(p.node_id)
                    todo.append(p.node_id)
        return ids

    stages = []
    for s in range(len(bounds) - 1):
        a, b = bounds[s], bounds[s + 1]
        compute = states[b - 1].compute_time - (states[a - 1].compute_time if a > 0 else 0.0)
        params = states[b - 1].parameter_size - (states[a - 1].parameter_size if a > 0 else 0.0)
        r = factors[s]
        allreduce = 4 * (r - 1) * params / (bandwidth * r)
        nodes = sorted(downset(b - 1) - downset(a - 1), key=lambda x: int(x[4:]))
        nodes = [n for n in nodes if not gr.nodes[n].node_desc.startswith("Input")]
        stages.append({"nodes": nodes, "replicas": r, "compute_s": compute, "params": params,
                       "stage_s": (compute + allreduce) / r})
    return {"graph": graph_txt, "machines": machines, "bandwidths": bandwidths,
            "activation_compression_ratio": ratio, "states": len(states),
            "pipeline_s": pipeline_s, "data_parallel_s": dp_s, "stages": stages}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout")
    ap.add_argument("graph")
    ap.add_argument("-n", type=int, nargs="+", required=True)
    ap.add_argument("-b", type=float, nargs="+", required=True)
    ap.add_argument("--activation_compression_ratio", type=float, default=None)
    a = ap.parse_args()
    print(json.dumps(run(os.path.abspath(a.checkout), os.path.abspath(a.graph), a.n, a.b,
                         a.activation_compression_ratio), separators=(",", ":")))


if __name__ == "__main__":
    main()
