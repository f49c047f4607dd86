#!/usr/bin/env bash
# End-to-end checks of the pipewright command as a user runs it.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for job in "$J"/*.json; do check "simulate $(basename "$job")" 0 "$PW" simulate "$job"; done
check "version" 0 "$PW" --version
check "no args" 2 "$PW"
check "unknown command" 2 "$PW" frobnicate
check "missing file" 2 "$PW" simulate "$tmp/none.json"
expect_text "stages 0 names field" 2 "pipeline.stages: must be in [1, 4096], got 0" "$PW" simulate "$J/uniform-8stage.json" --set pipeline.stages=0
check "stages 0 exit 2" 2 "$PW" simulate "$J/uniform-8stage.json" --set pipeline.stages=0
expect_text "typo names field" 2 "model.layer: unknown field" "$PW" simulate "$J/uniform-8stage.json" --set model.layer=3
expect_text "bad schedule" 2 "pipeline.schedule: must be one of" "$PW" simulate "$J/uniform-8stage.json" --set pipeline.schedule=zigzag
echo '{"name": "x", "model": ' > "$tmp/broken.json"
check "broken json exit 2" 2 "$PW" simulate "$tmp/broken.json"

# Numbers are range-checked in their own type, naming the path (issues 20, 22).
U="$J/uniform-8stage.json"; B="$J/bert24-4gpu.json"
for cmd in plan simulate; do
  expect_text "$cmd microbatches 1e12" 2 "pipeline.microbatches: must be in [1, 65536], got 1000000000000" "$PW" $cmd "$U" --set pipeline.microbatches=1e12
  expect_text "$cmd hidden 1e30" 2 "model.hidden: must be in [1, 131072]" "$PW" $cmd "$B" --set model.hidden=1e30
  expect_text "$cmd layers 1e8" 2 "model.layers: must be in [1, 10000], got 100000000" "$PW" $cmd "$U" --set model.layers=100000000
  expect_text "$cmd heads 2^32" 2 "model.heads: must be in [1, 1024], got 4294967296" "$PW" $cmd "$B" --set model.heads=4294967296
  expect_text "$cmd microbatch_size 2^32" 2 "training.microbatch_size: must be in [1, 65536], got 4294967296" "$PW" $cmd "$B" --set training.microbatch_size=4294967296
  expect_text "$cmd seq_len 2^31" 2 "model.seq_len: must be in [1, 131072], got 2147483648" "$PW" $cmd "$B" --set model.seq_len=2147483648
  expect_text "$cmd --set 1e400" 2 "model.fwd_ms: number out of range" "$PW" $cmd "$U" --set model.fwd_ms=1e400
done
sed 's/"fwd_ms": 1.0/"fwd_ms": 1e400/' "$U" > "$tmp/huge.json"
expect_text "1e400 in a file names the path" 2 "model.fwd_ms: number out of range" "$PW" simulate "$tmp/huge.json"
python3 -c 'import sys; sys.stdout.write("{\"name\": \"x\", \"model\": " + "[" * 200000 + "]" * 200000 + "}")' > "$tmp/deep.json"
expect_text "200000-deep nesting refused" 2 "nested deeper than 64 levels" "$PW" simulate "$tmp/deep.json"
expect_text "a directory as JOB" 2 "is not a regular file" "$PW" simulate "$tmp"
expect_text "/dev/zero as JOB" 2 "is not a regular file" "$PW" plan /dev/zero
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' > "$tmp/big.json"
expect_text "a 17 MiB job file" 2 "over the bound of 16 MiB" "$PW" simulate "$tmp/big.json"
# The data and runtime sections are checked by every command, not only run.
expect_text "plan checks data" 2 "data.kind: must be one of" "$PW" plan "$U" --set data.kind=video
expect_text "simulate checks runtime" 2 "runtime.slowdown: must be an array of 8" "$PW" simulate "$U" --set 'runtime.slowdown=[1,2]'
expect_text "simulate checks runtime layers" 2 "runtime.migrate[0].policy: must list one memory policy per layer (32)" \
  "$PW" simulate "$U" --set 'runtime.migrate=[{"iteration": 1, "policy": ["keep"]}]'
# A profile the job names is read by its own reader; errors still exit 2.
printf 'garbage\n' > "$tmp/bad.graph.txt"
expect_text "bad profile exits 2" 2 "model.profile:" "$PW" plan "$J/tiny-resnet-profile.json" --profile "$tmp/bad.graph.txt"
expect_text "json output" 0 '"throughput_samples_per_s"' "$PW" simulate "$J/uniform-8stage.json" --json
check "trace" 0 "$PW" simulate "$J/bert24-4gpu.json" --trace "$tmp/t.json"
python3 -c "import json,sys; d=json.load(open('$tmp/t.json')); assert len(d['traceEvents'])>100" 2>/dev/null \
  && passed=$((passed+1)) || { echo "FAIL trace is not valid JSON with events"; fail=$((fail+1)); }
expect_text "override sweeps" 0 '"microbatches": 32' "$PW" simulate "$J/uniform-8stage.json" --json --set training.batch_size=128
expect_text "oom reported" 0 '"feasible": false' "$PW" simulate "$J/uniform-8stage.json" --json --set cluster.memory_gb=1
expect_text "oom names stage" 0 'out of memory: stage 0' "$PW" simulate "$J/uniform-8stage.json" --set cluster.memory_gb=1

expect_text "launch shell" 0 "MASTER_ADDR=h1 MASTER_PORT=29500 WORLD_SIZE=4 RANK=3 LOCAL_RANK=1" "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2
expect_text "launch coordinator" 0 "--attach --port 29500" "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2
check "launch too few slots" 2 "$PW" launch "$J/bert24-4gpu.json" --hosts h1,h2 --nproc-per-host 1
check "launch sbatch" 0 "$PW" launch "$J/bert24-4gpu.json" --hosts n1,n2 --sbatch "$tmp/run.sbatch"
grep -q "#SBATCH --nodes=2" "$tmp/run.sbatch" && bash -n "$tmp/run.sbatch" && passed=$((passed+1)) || { echo "FAIL sbatch script"; fail=$((fail+1)); }

# Output files are checked to the last byte: a full disk is an error.
# A write that fails part way (a file-size limit, as a full disk): exit 1
# naming the option, the file and the reason; the old file is left whole and
# no temporary file stays (the output rule: docs/cli.md "Output files").
echo "the old trace" > "$tmp/big.json"
out=$( (trap '' XFSZ; ulimit -f 4; exec "$PW" simulate "$J/uniform-8stage.json" --trace "$tmp/big.json" --overwrite) 2>&1); rc=$?
[ "$rc" = 1 ] && grep -qF "writing --trace $tmp/big.json: File too large" <<<"$out" && [ "$(cat "$tmp/big.json")" = "the old trace" ] &&
  [ -z "$(find "$tmp" -name '*.tmp')" ] && passed=$((passed+1)) || { echo "FAIL --trace past a file-size limit: exit $rc"; echo "$out" | head -5; fail=$((fail+1)); }
# A 10 MB field value is named, not echoed in full.
/usr/bin/python3 -c "
import json, sys
j = json.load(open('$J/uniform-8stage.json')); j['pipeline']['schedule'] = 'z' * 10000000
json.dump(j, open('$tmp/huge.json', 'w'))"
out=$("$PW" simulate "$tmp/huge.json" 2>&1); rc=$?
[ "$rc" = 2 ] && [ "${#out}" -lt 2000 ] && grep -q 'pipeline.schedule: must be one of' <<<"$out" && grep -Eq 'clipped: 100[0-9]{5} bytes in all' <<<"$out" && passed=$((passed+1)) || { echo "FAIL 10 MB value: exit $rc, ${#out} chars"; echo "${out:0:300}"; fail=$((fail+1)); }

# simulate --json reports both iteration times and both bubble figures
# (issue 28): the window is within the span, the window bubble within the
# span's, and every stage's window within the span. The headline
# iteration_time_ms is the window (issue 43: iterations overlap in the
# engine), the span where training.clip_grad_norm makes the step a barrier.
"$PW" simulate "$U" --set 'pipeline.schedule="zb-h2"' --json > "$tmp/zb.json" 2>/dev/null
"$PW" simulate "$U" --set 'pipeline.schedule="zb-h2"' --set training.clip_grad_norm=1 --json > "$tmp/zb-clip.json" 2>/dev/null
py_check "simulate --json windows" "
import json
d = json.load(open('$tmp/zb.json'))
assert 0 < d['overlapped_iteration_ms'] <= d['span_ms'] + 1e-9, d
assert d['iteration_time_ms'] == d['overlapped_iteration_ms'] and d['iteration_cost'] == 'window', d
assert 0 <= d['window_bubble_fraction'] <= d['bubble_fraction'] + 1e-12, d
for s in d['stages']:
    assert 0 <= s['first_start_ms'] < s['last_end_ms'] <= d['span_ms'] + 1e-9, s
assert max(s['last_end_ms'] - s['first_start_ms'] for s in d['stages']) == d['overlapped_iteration_ms']
c = json.load(open('$tmp/zb-clip.json'))
assert c['iteration_cost'] == 'span' and c['iteration_time_ms'] == c['span_ms'] > d['iteration_time_ms'], c
"

# plan --export-schedule (issue 28): torch.distributed.pipelining's action
# CSV, one row per rank, every cell {stage}{F|I|W|B}{microbatch} (PyTorch's
# pattern), each stage's forwards 0..m-1 on its own rank; an existing file
# is kept unless --overwrite; PipeDream (no flush) is refused.
check "export generated" 0 "$PW" plan "$U" --set 'pipeline.schedule="generated"' --export-schedule "$tmp/s.csv"
py_check "export csv cells" "
import csv, re
rows = list(csv.reader(open('$tmp/s.csv', newline='')))
assert len(rows) == 8, len(rows)
for rank, row in enumerate(rows):
    cells = [re.fullmatch(r'(\d+)(F|I|B|W)(\d+)', c) for c in row]
    assert all(cells), row
    assert {int(c.group(1)) for c in cells} == {rank}, row
    fwd = [int(c.group(3)) for c in cells if c.group(2) == 'F']
    assert fwd == list(range(len(fwd))) and len(fwd) > 0, fwd
    assert sorted(int(c.group(3)) for c in cells if c.group(2) == 'W') == fwd
"
expect_text "export keeps a file" 2 "s.csv: file exists (give --overwrite to replace it)" "$PW" plan "$U" --export-schedule "$tmp/s.csv"
check "export --overwrite" 0 "$PW" plan "$U" --export-schedule "$tmp/s.csv" --overwrite
expect_text "export pipedream" 2 "pipedream has no flush" "$PW" plan "$U" --set 'pipeline.schedule="pipedream"' --export-schedule "$tmp/p.csv"
expect_text "--overwrite needs --export-schedule" 2 "--overwrite requires --export-schedule" "$PW" plan "$U" --overwrite

# Issue 41, items 1, 2, 6, 10 and 11 (docs/cli.md, "Hardening"): each check
# failed on main at 97bdf04.
# 1. A 60,000-part --set key crashed (SIGSEGV: a recursive copy of a
#    60,000-deep document); a key is bounded in parts like a file in depth.
deep_key=$("$PY" -c "print('.'.join(['a'] * 60000))")
for cmd in plan simulate; do
  expect_text "$cmd: a 60000-part --set key" 2 "--set: the key has 60000 parts; at most 64" "$PW" $cmd "$U" --set "$deep_key=1"
done
expect_text "a 65-part --set key" 2 "--set: the key has 65 parts; at most 64" "$PW" plan "$U" --set "$("$PY" -c "print('.'.join(['a'] * 65))")=1"
# 2. A --set value that is not UTF-8: refused naming the field, no raw bytes
#    echoed, and with --db no recording left behind.
not_utf8() {  # name, command...: exit 2, the field named, the output ASCII
  local name="$1"; shift
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" = 2 ] && grep -qF "name: the value given by --set is not valid UTF-8 (byte 0 is 0xff" <<<"$out" &&
     ! LC_ALL=C grep -q $'[\x80-\xff]' <<<"$out"; then passed=$((passed+1))
  else echo "FAIL $name: exit $rc (want 2, the field named, no raw bytes)"; echo "$out" | head -5; fail=$((fail+1)); fi
}
not_utf8 "plan --set name=<not UTF-8>" "$PW" plan "$U" --set name=$'\xff\xfe'
not_utf8 "simulate --set name=<not UTF-8>" "$PW" simulate "$U" --set name=$'\xff\xfe'
not_utf8 "simulate --json --set name=<not UTF-8>" "$PW" simulate "$U" --json --set name=$'\xff\xfe'
not_utf8 "simulate --db --set name=<not UTF-8>" "$PW" simulate "$U" --db "$tmp/utf8.sqlite" --set name=$'\xff\xfe'
# The same through a profile: a layer name that is not UTF-8 is refused at its line.
sed 's/^node2 -- /node2\xff -- /' "$SRC/resources/profiles/tiny-resnet.graph.txt" > "$tmp/not-utf8.graph.txt"
expect_text "a profile that is not UTF-8" 2 "not-utf8.graph.txt:2: not valid UTF-8 (byte 5 is 0xff of the line)" \
  "$PW" simulate "$J/tiny-resnet-profile.json" --profile "$tmp/not-utf8.graph.txt" --db "$tmp/utf8-profile.sqlite"
if [ -z "$(find "$tmp" -maxdepth 1 -name 'utf8*')" ]; then passed=$((passed+1)); else echo "FAIL simulate --db left a recording: $(ls "$tmp" | grep utf8)"; fail=$((fail+1)); fi
expect_text "a --set key that is not UTF-8" 2 "--set: the key is not valid UTF-8" "$PW" plan "$U" --set $'na\xffme=x'
sed 's/"name": "[^"]*"/"name": "u\xff"/' "$U" > "$tmp/not-utf8.json"
expect_text "a job file that is not UTF-8" 2 "name: not valid UTF-8 at byte" "$PW" plan "$tmp/not-utf8.json"
# 6. A command never replaces a file it reads, with or without --overwrite:
#    compared by device and inode (./NAME, a symbolic link are the same file).
cp "$U" "$tmp/job.json"; ln -sf job.json "$tmp/job-link.json"
refused_output "simulate --trace onto its job" "is the job file this command reads" "$tmp/job.json" \
  "$PW" simulate "$tmp/job.json" --trace "$tmp/job.json" --overwrite
refused_output "simulate --trace onto its job, another name" "is the job file this command reads" "$tmp/job.json" \
  "$PW" simulate "$tmp/job.json" --trace "$tmp/./job-link.json" --overwrite
cp "$J/fmnist-supernet.json" "$tmp/supernet.json"
refused_output "simulate --trace onto a supernet job" "is the job file this command reads" "$tmp/supernet.json" \
  "$PW" simulate "$tmp/supernet.json" --trace "$tmp/supernet.json" --overwrite
refused_output "plan --export-schedule onto its job" "is the job file this command reads" "$tmp/job.json" \
  "$PW" plan "$tmp/job.json" --export-schedule "$tmp/job.json" --overwrite
refused_output "launch --output onto its job" "is the job file this command reads" "$tmp/job.json" \
  "$PW" launch "$tmp/job.json" --hosts h1,h2 --output "$tmp/job.json" --overwrite
cp "$SRC/resources/profiles/tiny-resnet.graph.txt" "$tmp/graph.txt"
refused_output "simulate --trace onto its --profile" "is the profile this command reads" "$tmp/graph.txt" \
  "$PW" simulate "$J/tiny-resnet-profile.json" --profile "$tmp/graph.txt" --trace "$tmp/graph.txt" --overwrite
# `run job.json --run-dir .` rewrote the user's job.json (pipeline and supernet, with --set too).
if "$PW" run --help > /dev/null 2>&1; then
  mkdir -p "$tmp/rd"; cp "$SRC/tests/runtime/tiny-mlp.json" "$tmp/rd/job.json"; cp "$J/fmnist-supernet.json" "$tmp/rd/nas.json"
  refused_output "run job.json --run-dir ." "the run directory keeps its own job.json" "$tmp/rd/job.json" \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$tmp/rd" "$PW" run job.json --run-dir . --set training.iterations=1
  cp "$tmp/rd/nas.json" "$tmp/rd/job.json"
  refused_output "run job.json --run-dir . (supernet)" "the run directory keeps its own job.json" "$tmp/rd/job.json" \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$tmp/rd" "$PW" run job.json --run-dir . --set training.iterations=1
  [ ! -e "$tmp/rd/plan.json" ] && [ ! -d "$tmp/rd/events" ] && passed=$((passed+1)) || { echo "FAIL a refused run wrote into its directory: $(ls "$tmp/rd")"; fail=$((fail+1)); }
fi
# 10. control ENDPOINT talks to the endpoint directly: given a control
#     endpoint it never subscribes to it as telemetry first (which cost up to
#     1.5 s per request). A fake ZMTP 3.0 peer that speaks as a ROUTER
#     records the socket type of everything that connects: one DEALER.
cat > "$tmp/zmtp_peer.py" <<'EOF'
import socket, struct, sys, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(16)
print(srv.getsockname()[1], flush=True)
seen = []
def recvn(c, n):
    b = b""
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk: raise EOFError
        b += chunk
    return b
def serve(c):
    try:
        c.sendall(b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31)
        recvn(c, 64)
        props = bytes([11]) + b"Socket-Type" + struct.pack(">I", 6) + b"ROUTER"
        body = b"\x05READY" + props
        c.sendall(b"\x04" + bytes([len(body)]) + body)
        flags = recvn(c, 1)[0]
        size = struct.unpack(">Q", recvn(c, 8))[0] if flags & 2 else recvn(c, 1)[0]
        cmd = recvn(c, size)
        i = 1 + cmd[0]
        while i < len(cmd):
            n = cmd[i]; name = cmd[i + 1:i + 1 + n]; i += 1 + n
            v = struct.unpack(">I", cmd[i:i + 4])[0]; value = cmd[i + 4:i + 4 + v]; i += 4 + v
            if name.lower() == b"socket-type": seen.append(value.decode())
        time.sleep(30)
    except Exception:
        pass
srv.settimeout(float(sys.argv[2]))
try:
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
except socket.timeout:
    pass
open(sys.argv[1], "w").write(" ".join(seen))
EOF
# A build without the messaging layer (the core-only preset) has no control command: not counted either way.
if "$PW" control --help > /dev/null 2>&1; then
coproc ZP { "$PY" "$tmp/zmtp_peer.py" "$tmp/peers.txt" 2.5; }
read -r zport <&"${ZP[0]}"
"$PW" control "tcp://127.0.0.1:$zport" status --timeout 0.5 > /dev/null 2>&1  # no reply: exit 1
wait "$ZP_PID" 2>/dev/null
[ "$(cat "$tmp/peers.txt" 2>/dev/null)" = "DEALER" ] && passed=$((passed+1)) ||
  { echo "FAIL control subscribed to a control endpoint first: peers '$(cat "$tmp/peers.txt" 2>/dev/null)', want 'DEALER'"; fail=$((fail+1)); }
else
  echo "not run: control (this pipewright has no messaging layer)"
fi
# 11. plan on a supernet job: a usage error naming the fields and the commands that plan one.
for want in "search_space" 'pipeline.schedule "csp"' "pipewright simulate JOB.json" "pipewright run JOB.json"; do
  expect_text "plan on a supernet job names $want" 2 "$want" "$PW" plan "$J/fmnist-supernet.json"
done
expect_text "plan --json on a supernet job" 2 "has no static plan" "$PW" plan "$J/et-supernet-4gpu.json" --json
expect_text "plan: csp without a search space" 2 "pipeline.schedule: \"csp\" schedules the subnets of a supernet job" "$PW" plan "$U" --set pipeline.schedule=csp
expect_text "simulate: csp without a search space" 2 "pipeline.schedule: \"csp\" schedules the subnets of a supernet job" "$PW" simulate "$U" --set pipeline.schedule=csp

checks_done
