#!/usr/bin/env python3
"""Tail a live Pipewright run's telemetry: a third-party client in ~100 lines.

Needs only Debian's python3-zmq and python3-protobuf, plus protoc
(protobuf-compiler) to compile ipc/pipewright.proto on the fly.

    pipewright simulate resources/jobs/gpt32-8gpu.json --listen tcp://127.0.0.1:5555 --pace 1 &
    python3 docs/examples/tail_telemetry.py tcp://127.0.0.1:5555

It subscribes to every topic, waits for a heartbeat (which names the
control endpoint), asks for a snapshot over the control socket (so it
misses nothing that came before), then prints what arrives and counts
gaps in each topic's sequence numbers, until the run ends.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO = os.path.join(HERE, "..", "..", "ipc", "pipewright.proto")


def load_protocol(proto_path):
    """Compiles pipewright.proto with protoc into a temporary module."""
    out = tempfile.mkdtemp(prefix="pw_proto_")
    proto_dir, name = os.path.split(os.path.abspath(proto_path))
    subprocess.run(["protoc", "-I", proto_dir, "--python_out", out, name], check=True)
    sys.path.insert(0, out)
    import pipewright_pb2  # noqa: E402  (generated just now)
    return pipewright_pb2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint", help="telemetry endpoint, e.g. tcp://127.0.0.1:5555")
    ap.add_argument("--proto", default=DEFAULT_PROTO, help="path to ipc/pipewright.proto")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the first heartbeat")
    ap.add_argument("--quiet", action="store_true", help="print only the final summary")
    ap.add_argument("--json", action="store_true", help="final summary as JSON")
    args = ap.parse_args()

    pb = load_protocol(args.proto)
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(args.endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, b"")

    expected = {}  # topic -> next sequence number
    gaps = missed = bad = events = snapshot_events = 0
    state = "unknown"

    def decode(frames):
        nonlocal bad
        if len(frames) != 2:
            bad += 1
            return None, None
        env = pb.Envelope()
        try:
            env.ParseFromString(frames[1])
        except Exception:
            bad += 1
            return None, None
        if env.protocol_major > 1 or not env.WhichOneof("body"):
            bad += 1  # newer protocol or a kind this client does not know
            return None, None
        return frames[0].decode(errors="replace"), env

    # 1. Wait for a heartbeat: the subscription is live and names the control socket.
    deadline = time.time() + args.timeout
    control = None
    while control is None:
        if time.time() > deadline or not sub.poll(int(max(0, deadline - time.time()) * 1000)):
            sys.exit("no heartbeat from %s within %.0f s" % (args.endpoint, args.timeout))
        topic, env = decode(sub.recv_multipart())
        if topic == "heartbeat":
            control = env.heartbeat.control_endpoint
    # 2. Snapshot over the control socket (DEALER -> ROUTER), then continue from its sequence numbers.
    if control:
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(control)
        req = pb.ControlRequest(protocol_major=1, request_id=1, client="tail_telemetry.py")
        req.snapshot.SetInParent()
        dealer.send(req.SerializeToString())
        if dealer.poll(3000):
            reply = pb.ControlReply()
            reply.ParseFromString(dealer.recv())
            snap = reply.snapshot
            for ts in snap.last_seq:
                expected[ts.topic] = ts.seq + 1
            snapshot_events = events = snap.events
            state = pb.RunState.Name(snap.status.state).lower()
            if not args.quiet:
                print("snapshot: run %s, %s, %d events so far" % (env.run_id, state, snap.events))
    # 3. Follow the stream.
    period = 1.0
    last = time.time()
    while state not in ("finished", "failed", "stopped"):
        if not sub.poll(100):
            if time.time() - last > 3 * period + 1:
                sys.exit("the publisher went silent")
            continue
        last = time.time()
        topic, env = decode(sub.recv_multipart())
        if env is None:
            continue
        want = expected.get(topic)
        if want is not None and env.seq < want:
            continue  # already in the snapshot
        if want is not None and env.seq > want:
            gaps += 1
            missed += env.seq - want
        expected[topic] = env.seq + 1
        body = env.WhichOneof("body")
        if body == "events":
            events += len(env.events.events)
        elif body == "status":
            state = pb.RunState.Name(env.status.state).lower()
        elif body == "heartbeat":
            period = max(env.heartbeat.period_ms / 1000.0, 0.05)
        if not args.quiet and body != "heartbeat":
            print("%-10s seq %-6d %s" % (topic, env.seq, "%d events" % len(env.events.events) if body == "events" else
                                        state if body == "status" else ""))
    summary = {"status": state, "events": events, "snapshot_events": snapshot_events, "gaps": gaps,
               "missed_messages": missed, "bad_messages": bad}
    print(json.dumps(summary) if args.json else
          "run %s: %d events, %d gaps (%d messages missed), %d bad messages" % (state, events, gaps, missed, bad))
    return 0 if state == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
