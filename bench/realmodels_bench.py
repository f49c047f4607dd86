"""pw_bench_realmodels: torchvision's ResNet-50 and VGG-16, split by pipewright-split, trained by real
pipelines of the CLI on this machine's CPU (issue 29).

usage: realmodels_bench.py PIPEWRIGHT WORKER SPLITTER   (scripts/bench runs it as build/bench/runtime/pw_bench_realmodels)

For each model: split it (`pipewright-split --cuts auto`), measure it (`pipewright profile JOB -o P.json
--threads 1`), then for 1, 2 and 4 stages and the planners vpipe and uniform: the simulator's
prediction (`pipewright simulate --json`) and a real run (`pipewright run --json --threads 1`, one
intra-op thread per worker). Prints samples/s as ratios against the baselines run here: vpipe over
uniform at the same stage count, each run over the 1-stage run, and the predicted iteration time over
the measured one. Where both planners give the same plan the run is done once and said so.

One stage per process and one thread per process: 4 stages on a 2-core machine share the cores, so
the simulator (one device per stage) predicts a speedup the machine cannot give; the 4-stage
predicted/measured ratio shows it. PW_BENCH_QUICK=1 (45 s of CPU time): smaller
images and batches, 2 iterations, ResNet-50 at 4 stages only, VGG-16 at 2 stages with vpipe's plan only.
Exits 77 (scripts/bench: skipped) when python3 has no torch or torchvision.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import torch  # noqa: F401  (the splitter and the models need it)
    import torchvision  # noqa: F401
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import {e.name} (Debian's python3-torch and python3-torchvision): "
          "no real-model benchmark")
    sys.exit(77)

QUICK = os.environ.get("PW_BENCH_QUICK", "") not in ("", "0")
PW, WORKER, SPLITTER = sys.argv[1:4]
ENV = dict(os.environ, PW_WORKER=WORKER)

PLANNERS = ["vpipe", "uniform"]
# Small inputs that fit a 2-core CPU; 10 classes. VGG-16 at 32x32 still carries its 120M-parameter
# classifier (the adaptive pool makes 7x7 maps of the 1x1 map), so its optimizer step is large and
# every run loads and saves 0.5 GB per stage. ResNet-50 at 48x48 as in the equivalence tests
# (batch norm over microbatches of 2 sees 2x2 maps in its last blocks).
# iterations: a run's iteration time is the mean after the first.
MODELS = [
    dict(name="resnet50", spec="torchvision.models:resnet50", kwargs={"num_classes": 10},
         image=32 if QUICK else 48, batch=4 if QUICK else 8, micro=2, iterations=2 if QUICK else 6,
         stages=[4] if QUICK else [1, 2, 4]),
    dict(name="vgg16", spec="torchvision.models:vgg16", kwargs={"num_classes": 10, "dropout": 0.0},
         image=32, batch=4 if QUICK else 8, micro=2, iterations=2 if QUICK else 5,
         stages=[2] if QUICK else [1, 2, 4], planners=["vpipe"] if QUICK else PLANNERS),
]
REPEATS = 1 if QUICK else 3      # profile repeats


def sh(args, what):
    p = subprocess.run(args, capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        print(f"FAIL: {what}: {' '.join(args)} exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        sys.exit(1)
    return p.stdout


def layers_per_stage(plan):
    return [s["last_layer"] - s["first_layer"] + 1 for s in plan["stages"]]


def bench_model(m, tmp):
    start = time.time()
    d = os.path.join(tmp, m["name"])
    os.makedirs(d)
    model_pt, job_json, profile = (os.path.join(d, f) for f in ("model.pt", "job.json", "profile.json"))
    t0 = time.time()
    out = sh([sys.executable, SPLITTER, m["spec"], "--input", f"3,{m['image']},{m['image']}", "-o", model_pt,
              "--kwargs", json.dumps(m["kwargs"])], "split")
    split_s = time.time() - t0
    job = {"name": f"bench-{m['name']}",
           "model": {"kind": "torchscript", "path": model_pt, "input": {"shape": [3, m["image"], m["image"]]},
                     "classes": 10},
           "data": {"kind": "synthetic", "samples": 4 * m["batch"]},
           "training": {"optimizer": "sgd", "lr": 0.001, "batch_size": m["batch"], "microbatch_size": m["micro"],
                        "iterations": m["iterations"]},
           "cluster": {"devices": 1, "device": "custom", "memory_gb": 16, "tflops": 0.05},
           "pipeline": {"stages": 1, "schedule": "1f1b", "planner": "vpipe"}}
    with open(job_json, "w") as f:
        json.dump(job, f)
    t0 = time.time()
    sh([PW, "profile", job_json, "-o", profile, "--repeats", str(REPEATS), "--threads", "1"], "profile")
    profile_s = time.time() - t0
    with open(profile) as f:
        n_layers = len(json.load(f)["layers"])
    print(f"\n### {m['name']}: {n_layers} layers, {m['image']}x{m['image']}, batch {m['batch']} in microbatches of "
          f"{m['micro']}, 1F1B, SGD, {m['iterations']} iterations per run (split {split_s:.0f} s, profile {profile_s:.0f} s)\n")
    print("| stages | planner | layers per stage | predicted ms/it | measured ms/it | predicted/measured | "
          "samples/s | vs 1 stage | vpipe/uniform |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = None
    rows = []
    for k in m["stages"]:
        done = {}
        for planner in m.get("planners", PLANNERS) if k > 1 else PLANNERS[:1]:
            common = ["--profile", profile, "--planner", planner, "--set", f"pipeline.stages={k}",
                      "--set", f"cluster.devices={k}"]
            sim = json.loads(sh([PW, "simulate", job_json, "--json"] + common, f"simulate {k} stages {planner}"))
            parts = layers_per_stage(sim["plan"])
            key = json.dumps(sim["plan"]["stages"], sort_keys=True)
            if key in done:
                run, same = done[key], True
            else:
                run = json.loads(sh([PW, "run", job_json, "--json", "--threads", "1", "--run-dir",
                                     os.path.join(d, f"run-{k}-{planner}")] + common, f"run {k} stages {planner}"))
                done[key], same = run, False
                shutil.rmtree(os.path.join(d, f"run-{k}-{planner}"))  # VGG-16: 1 GB of weights per run
            if k == 1:
                base = run["samples_per_s"]
            rows.append((k, planner, run["samples_per_s"]))
            ratio = ""
            if planner == "uniform":
                vp = next(r[2] for r in rows if r[0] == k and r[1] == "vpipe")
                ratio = f"{vp / run['samples_per_s']:.2f}x" + (" (same plan)" if same else "")
            vs1 = f"{run['samples_per_s'] / base:.2f}x" if base else "-"
            print(f"| {k} | {planner} | {parts} | {sim['iteration_time_ms']:.0f} | {run['iteration_ms']:.0f} | "
                  f"{sim['iteration_time_ms'] / run['iteration_ms']:.2f} | {run['samples_per_s']:.1f} | "
                  f"{vs1} | {ratio} |", flush=True)
    print(f"\n({m['name']}: {time.time() - start:.0f} s)")


def main():
    if QUICK:
        print("quick mode (PW_BENCH_QUICK=1): small inputs, the figures are not measurements")
    print(f"pw_bench_realmodels: real runs on this machine ({os.cpu_count()} cores), one thread per stage process; "
          f"load average before: {os.getloadavg()[0]:.1f}")
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="pw-bench-realmodels-") as tmp:
        for m in MODELS:
            bench_model(m, tmp)
    print(f"\n(pw_bench_realmodels: {time.time() - t0:.0f} s; load average after: {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
