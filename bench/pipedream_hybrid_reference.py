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
(compute + 4 (r - 1) P / (r bandwidth)) / r as the recurrence uses it ("stages"; one level). Levels
(-n 4 2 -b B1 B2: 4 workers per machine at B1, 2 machines at B2) come as "analyses", in the order
PipeDream analyses them: the outermost level's split of the whole model, then each of its stages
split over one machine's workers (stage_s is meaningful on the innermost level only).
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

    calls = []
    original = opt.analyze_partitioning

    def analyze(A, states, start, end, bandwidth, num_machines, *rest):
        splits = original(A, states, start, end, bandwidth, num_machines, *rest)
        calls.append((A, states, start, end, bandwidth, num_machines, splits))
        return splits

    opt.analyze_partitioning = analyze
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        pipeline_s, dp_s = opt.main(machines, graph_txt, bandwidths, 16e9, False, False, False, ratio, None,
                                    print_configuration=True, verbose=False)
    gr = opt.graph.Graph.from_str(open(graph_txt).read())

    def downset(state_index, states):
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

    def stages_of(call):
        A, states, start, end, bandwidth, num_machines, splits = call
        # The replication factors analyze_partitioning printed, walked from A the same way it walks them.
        factors = []
        meta = A[start][end - 1][num_machines - 1]
        while meta[1] is not None:
            factors.append(meta[2])
            meta = A[start][meta[1][0]][meta[1][1]]
        factors.append(meta[2])
        factors.reverse()
        bounds = [start] + list(splits) + [end]
        out = []
        for s in range(len(bounds) - 1):
            a, b = bounds[s], bounds[s + 1]
            compute = states[b - 1].compute_time - (states[a - 1].compute_time if a > 0 else 0.0)
            params = states[b - 1].parameter_size - (states[a - 1].parameter_size if a > 0 else 0.0)
            r = factors[s]
            allreduce = 4 * (r - 1) * params / (bandwidth * r)
            nodes = sorted(downset(b - 1, states) - downset(a - 1, states), key=lambda x: int(x[4:]))
            nodes = [n for n in nodes if not gr.nodes[n].node_desc.startswith("Input")]
            # stage_s: the innermost level's stage time; an outer level's stage computes on the level
            # below, whose time is in its own stages.
            out.append({"states": [a, b], "nodes": nodes, "replicas": r, "compute_s": compute, "params": params,
                        "stage_s": (compute + allreduce) / r})
        return out

    # main analyses the outermost level first, then each of its stages one level down.
    levels = []
    for call in calls:
        levels.append({"machines": call[5], "bandwidth": call[4], "span": [call[2], call[3]], "stages": stages_of(call)})
    return {"graph": graph_txt, "machines": machines, "bandwidths": bandwidths,
            "activation_compression_ratio": ratio, "states": len(calls[0][1]),
            "pipeline_s": pipeline_s, "data_parallel_s": dp_s,
            "stages": levels[-1]["stages"] if len(machines) == 1 else None, "analyses": levels}


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
