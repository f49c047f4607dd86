#!/usr/bin/env python3
"""Fault trials (issue 22): faults injected into a real recorded run at a
seeded random point, repeated.

usage: fault_trials.py PIPEWRIGHT WORKER JOB.json KIND...
  JOB.json: a pipeline job (WORKER: pipewright-worker) or a supernet job
            (WORKER: pw_nas_worker; its CSP run under the same faults, issue 31,
            with checkpoints: after each fault, `run --resume` continues it)
  KIND: worker-kill worker-stop coordinator-kill coordinator-stop disk
env:  PW_FAULT_TRIALS  trials per kind (default 3; raise it for a longer soak)
      PW_FAULT_BUDGET_S  no new round of trials starts after this many seconds
                       (default 60; 0: none); the first round always runs
      PW_FAULT_SEED    seed of the random fault points (default 22)
      PW_TIMING=1      also assert the detection times (the `timing` entry)

After every fault: the database opens (`pipewright replay`), holds every
event that was committed before the fault (read from it mid-run), says how
the run ended and why; no worker process of the run is left 2 s after its
coordinator ended; a full disk is reported as "No space left on device"
naming the file, and leaves no temporary file. The disk trials mount a small
tmpfs and exit 77 (skip) where mounting is not permitted.
"""
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

PW, WORKER, JOB = sys.argv[1:4]
KINDS = sys.argv[4:]
TRIALS = int(os.environ.get("PW_FAULT_TRIALS", "3"))
BUDGET_S = float(os.environ.get("PW_FAULT_BUDGET_S", "60"))
RNG = random.Random(int(os.environ.get("PW_FAULT_SEED", "22")))
TIMING = os.environ.get("PW_TIMING") == "1"
with open(JOB) as _f:
    SUPERNET = "search_space" in json.load(_f)
ENV = dict(os.environ, **{"PW_NAS_WORKER" if SUPERNET else "PW_WORKER": WORKER})
# Long enough that every fault lands mid-run. A supernet run trains one
# subnet per iteration on a small slice of Fashion-MNIST, with a checkpoint
# every SUPERNET_EVERY subnets: after every fault it must resume from it.
SUPERNET_EVERY = 16
RUN_SETS = (["--set", "training.iterations=20000", "--set", "data.train_samples=640", "--set", "data.test_samples=100",
             "--checkpoint-every", str(SUPERNET_EVERY)]
            if SUPERNET else ["--set", "training.iterations=1000000"])
FASHION_MNIST = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
SKIP = 77
# Detection bounds (timing entry only): the coordinator polls every 50 ms,
# a worker's heartbeat times out after 2 s, a stopped worker is killed 1 s
# after the abort. Generous for a loaded CI machine.
BOUND_S = {"worker-kill": 3.0, "worker-stop": 6.0, "disk": 5.0}


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def children_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(d))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def events(db):
    """The committed events, read as any live reader would."""
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return set(c.execute("SELECT stage, kind, start_ns, end_ns, microbatch FROM events"))
        finally:
            c.close()
    except sqlite3.Error:
        return set()


def checkpoint_index(run_dir):
    return os.path.join(run_dir, "checkpoint", "meta.json")


def resume_after(kind, run_dir, disk):
    """A supernet run continues from its last complete checkpoint after the
    fault (the disk freed first): a short stretch past it, through
    `pipewright run --resume`, must start there and train on."""
    with open(checkpoint_index(run_dir)) as f:
        k = json.load(f)["subnet"]
    if disk:
        os.remove(os.path.join(disk, "filler"))
    total = k + SUPERNET_EVERY // 2
    r = subprocess.run([PW, "run", "--resume", run_dir, "--set", f"training.iterations={total}", "--json", "--quiet"],
                       capture_output=True, text=True, env=ENV, timeout=120)
    check(r.returncode == 0, f"{kind}: the resume from subnet {k} failed ({r.returncode}): {r.stderr}")
    out = json.loads(r.stdout)
    check(out["start_subnet"] == k and len(out["losses"]) == total,
          f"{kind}: the resume should start at {k} and end with {total} losses: start {out['start_subnet']}, "
          f"{len(out['losses'])} losses")
    return k


def run_row(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return c.execute("SELECT status, reason, ended_unix_ns FROM run").fetchone()
    finally:
        c.close()


def wait_exit(proc, timeout):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def mount_tmpfs(path, size):
    os.makedirs(path)
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], capture_output=True, text=True)
    except OSError:  # no mount program
        return False
    return r.returncode == 0


def fill(path):
    """Takes every free block of the file system at `path`."""
    with open(os.path.join(path, "filler"), "wb", buffering=0) as f:
        block = b"\0" * 65536
        try:
            while True:
                f.write(block)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError:
            pass


def trial(kind, n, tmp):
    run_root = tmp
    db_dir = tmp
    disk = None
    if kind == "disk":
        disk = os.path.join(tmp, "disk")
        if not mount_tmpfs(disk, "64m"):
            return "skip"
        run_root = disk
        # Alternately the database elsewhere (it must then record the failure
        # and its reason) and beside the run, both on the full disk.
        db_dir = tmp if n % 2 == 0 else disk
    run_dir = os.path.join(run_root, "run")
    db = os.path.join(db_dir, "run.sqlite")
    err_path = os.path.join(tmp, "stderr")
    args = [PW, "run", JOB, "--run-dir", run_dir, "--db", db, "--quiet"] + RUN_SETS
    if kind == "disk" and not SUPERNET:
        args += ["--checkpoint-every", "3"]
    try:
        with open(err_path, "w") as err:
            coord = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL, stderr=err)
        try:
            return run_trial(kind, coord, db, run_dir, err_path, disk)
        finally:
            if coord.poll() is None:
                coord.kill()
                coord.wait()
    finally:
        if disk:
            subprocess.run(["umount", "-l", disk])


def run_trial(kind, coord, db, run_dir, err_path, disk):
    start = time.monotonic()
    workers = []
    while time.monotonic() - start < 90:
        check(coord.poll() is None, f"run ended before the fault: {open(err_path).read()}")
        if len(workers) < 2:
            workers = children_of(coord.pid)
        # A supernet trial faults after its first complete checkpoint, so
        # that every kind of fault is followed by a resume.
        if len(workers) >= 2 and events(db) and (not SUPERNET or os.path.exists(checkpoint_index(run_dir))):
            break
        time.sleep(0.05)
    else:
        raise Failure("the run recorded no event within 90 s")
    time.sleep(RNG.uniform(0.1, 1.5))  # the random point within the run
    before = events(db)
    check(before, "no committed event before the fault")
    victim = RNG.choice(workers)
    fault_t = time.monotonic()
    expect_rc, expect_status, expect_reason = None, None, None
    if kind == "worker-kill":
        os.kill(victim, signal.SIGKILL)
        expect_rc, expect_status, expect_reason = 1, "failed", "killed by signal 9"
    elif kind == "worker-stop":
        os.kill(victim, signal.SIGSTOP)
        expect_rc, expect_status, expect_reason = 1, "failed", "stopped responding"
    elif kind == "coordinator-kill":
        os.kill(coord.pid, signal.SIGKILL)
        expect_rc, expect_status = -signal.SIGKILL, "running"
    elif kind == "coordinator-stop":
        os.kill(coord.pid, signal.SIGSTOP)
        time.sleep(RNG.uniform(0.5, 1.5))
        os.kill(coord.pid, signal.SIGCONT)
        # The run goes on (the workers never needed the stopped coordinator):
        # new events are recorded, then the run is ended by SIGINT.
        t = time.monotonic()
        while len(events(db)) <= len(before) and time.monotonic() - t < 10:
            time.sleep(0.05)
        check(len(events(db)) > len(before), "no event recorded after the coordinator continued")
        os.kill(coord.pid, signal.SIGINT)
        fault_t = time.monotonic()
        expect_rc, expect_status, expect_reason = 130, "interrupted", "interrupted"
    elif kind == "disk":
        fill(disk)
        expect_rc, expect_reason = 1, "No space left on device"
    rc = wait_exit(coord, 60)
    detected = time.monotonic() - fault_t
    check(rc is not None, f"{kind}: the run did not end within 60 s of the fault")
    err = open(err_path).read()
    check(rc == expect_rc, f"{kind}: exit {rc}, want {expect_rc}: {err}")
    if expect_reason and kind != "coordinator-stop":
        check(expect_reason in err, f"{kind}: the error should say \"{expect_reason}\": {err}")

    time.sleep(2.0)
    left = [p for p in workers if alive(p)]
    check(not left, f"{kind}: worker processes {left} still alive 2 s after the coordinator ended")

    r = subprocess.run([PW, "replay", db, "--json"], capture_output=True, text=True, env=ENV)
    check(r.returncode == 0, f"{kind}: the database does not open: {r.stderr}")
    after = events(db)
    lost = before - after
    check(not lost, f"{kind}: {len(lost)} of {len(before)} events committed before the fault are gone")
    status, reason, ended = run_row(db)
    if kind == "disk":
        # Written if the database could still be written; else it is left as
        # a crash leaves it: status running without an end time.
        check((status == "failed" and expect_reason in reason) or (status == "running" and ended is None),
              f"disk: status {status} ({reason}), want failed naming ENOSPC or running without an end")
        leftovers = [os.path.join(d, f) for d, _, fs in os.walk(run_dir) for f in fs if f.endswith(".tmp")]
        check(not leftovers, f"disk: temporary files left: {leftovers}")
        check(status == "failed" or os.path.dirname(db) == disk, f"disk: a database on another disk must say failed")
    else:
        check(status == expect_status, f"{kind}: status {status} ({reason}), want {expect_status}")
        if expect_reason:
            check(expect_reason in reason, f"{kind}: reason \"{reason}\" should say \"{expect_reason}\"")
        check((ended is None) == (status == "running"), f"{kind}: ended_unix_ns {ended} with status {status}")
    if TIMING and kind in BOUND_S:
        check(detected <= BOUND_S[kind], f"{kind}: the run ended {detected:.2f} s after the fault, bound {BOUND_S[kind]} s")
    resumed = resume_after(kind, run_dir, disk) if SUPERNET and not TIMING else None
    return {"kind": kind, "ended_after_s": round(detected, 3), "events_before": len(before), "events_after": len(after),
            "lost": len(lost), "status": status, "reason": (reason or "")[:160], "stderr": err.strip()[-160:],
            "resumed_at": resumed}


def main():
    if SUPERNET and not os.path.exists(FASHION_MNIST):
        print(f"SKIP: no Fashion-MNIST at {FASHION_MNIST} for the supernet job")
        return SKIP
    results, skipped = [], []
    started = time.monotonic()
    for n in range(TRIALS):  # rounds over the kinds, so a budget cut keeps every kind
        if n > 0 and BUDGET_S > 0 and time.monotonic() - started > BUDGET_S:
            print(f"note: {n} round(s) within the {BUDGET_S:.0f} s budget (PW_FAULT_BUDGET_S)")
            break
        for kind in KINDS:
            if kind in skipped:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    r = trial(kind, n, tmp)
                except Failure as e:
                    print(f"FAIL (trial {n + 1} of {kind}): {e}")
                    return 1
                if r == "skip":
                    skipped.append(kind)
                    continue
                print(json.dumps(r), flush=True)
                results.append(r)
    if skipped and not results:
        print(f"SKIP: cannot mount a tmpfs for {', '.join(skipped)} (needs root or CAP_SYS_ADMIN)")
        return SKIP
    if skipped:
        print(f"FAIL: {', '.join(skipped)} could not mount a tmpfs while other kinds ran; run it alone")
        return 1
    print(f"ok: {len(results)} trials, {sum(r['lost'] for r in results)} events lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
