#!/usr/bin/env bash
# The CLI live: simulate --listen publishes, watch follows (a second
# process, as the studio does), control pauses/resumes/stops, and the
# Python client of docs/examples tails the same stream.
set -u
PW="$1"; SRC="$2"
PY=/usr/bin/python3
fail=0; passed=0
ok() { passed=$((passed+1)); }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | head -20; fail=$((fail+1)); }
J="$SRC/resources/jobs"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
# A free loopback port for a job (the publisher binds it, control is ephemeral).
port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 1. watch follows a paced simulation to the end: every event, no gap.
P=$(port)
"$PW" simulate "$J/gpt32-8gpu.json" --json --db "$tmp/live.sqlite" --listen "tcp://127.0.0.1:$P" --pace 4 --linger 1 > "$tmp/sim.json" 2> "$tmp/sim.err" &
pids+=($!); sim=$!
sleep 0.2
out=$(timeout 30 "$PW" watch "tcp://127.0.0.1:$P" --json --timeout 10 2>&1); rc=$?
wait $sim
[ "$rc" = 0 ] && ok || bad "watch exit $rc" "$out"
echo "$out" > "$tmp/watch.json"
$PY -c "
import json
w = json.load(open('$tmp/watch.json')); s = json.load(open('$tmp/sim.json'))
assert w['status'] == 'finished', w
assert w['events'] == s['events'], (w['events'], s['events'])
assert w['gaps'] == 0 and w['malformed'] == 0, w
assert w['run_id'] == s['run_id'], (w['run_id'], s['run_id'])
" 2>&1 && ok || bad "watch saw every event of the run" "$(cat "$tmp/watch.json")"
grep -q "telemetry tcp://127.0.0.1:$P  control tcp://127.0.0.1:" "$tmp/sim.err" && ok || bad "simulate prints its endpoints" "$(cat "$tmp/sim.err")"
"$PW" replay "$tmp/live.sqlite" --json > "$tmp/live_replay.json" 2>&1
$PY -c "
import json
r = json.load(open('$tmp/live_replay.json'))
assert r['status'] == 'finished'
" && ok || bad "recorded while publishing" "$(cat "$tmp/live_replay.json")"

# 2. Late joiners after the run ended (it lingers): the snapshot holds everything.
#    watch and the Python client of docs/examples join side by side.
P=$(port)
"$PW" simulate "$J/bert24-4gpu.json" --json --listen "tcp://127.0.0.1:$P" --linger 8 > "$tmp/sim2.json" 2>/dev/null &
pids+=($!); sim=$!
have_py=0
if $PY -c "import zmq, google.protobuf" 2>/dev/null && command -v protoc >/dev/null; then have_py=1; fi
sleep 0.5
if [ $have_py = 1 ]; then
  timeout 30 $PY "$SRC/docs/examples/tail_telemetry.py" "tcp://127.0.0.1:$P" --quiet --json --timeout 7 > "$tmp/py.out" 2>&1 &
  pyp=$!; pids+=($pyp)
fi
out=$(timeout 20 "$PW" watch "tcp://127.0.0.1:$P" --json --timeout 7 2>&1)
[ $have_py = 1 ] && wait $pyp
kill $sim 2>/dev/null; wait $sim 2>/dev/null
$PY -c "
import json, sys
w = json.loads(sys.argv[1]); s = json.load(open('$tmp/sim2.json'))
assert w['snapshot'] and w['status'] == 'finished' and w['events'] == s['events'] and w['gaps'] == 0, w
" "$out" && ok || bad "late joiner gets it all from the snapshot" "$out"
if [ $have_py = 1 ]; then
  $PY -c "
import json, sys
w = json.loads(open('$tmp/py.out').read().splitlines()[-1]); s = json.load(open('$tmp/sim2.json'))
assert w['status'] == 'finished' and w['events'] == s['events'] and w['gaps'] == 0, w
" && ok || bad "python example client" "$(cat "$tmp/py.out")"
else
  # scripts/test installs them: their absence is a broken set-up, not a pass.
  bad "python example client: python3-zmq, python3-protobuf or protoc is missing (scripts/test installs them)"
fi

# 4. Control: pause, status, resume, refused checkpoint, stop -> recorded as stopped.
P=$(port)
"$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/stop.sqlite" --listen "tcp://127.0.0.1:$P" --pace 0.5 > "$tmp/sim3.out" 2>&1 &
pids+=($!); sim=$!
sleep 0.3
out=$("$PW" control "tcp://127.0.0.1:$P" pause 2>&1) && ok || bad "pause" "$out"
out=$("$PW" control "tcp://127.0.0.1:$P" status 2>&1); grep -q "paused" <<<"$out" && ok || bad "status says paused" "$out"
out=$("$PW" control "tcp://127.0.0.1:$P" pause 2>&1); [ $? = 1 ] && grep -q "already paused" <<<"$out" && ok || bad "second pause refused" "$out"
out=$("$PW" control "tcp://127.0.0.1:$P" resume 2>&1) && ok || bad "resume" "$out"
out=$("$PW" control "tcp://127.0.0.1:$P" checkpoint 2>&1); [ $? = 1 ] && grep -q "no training state" <<<"$out" && ok || bad "checkpoint refused with a reason" "$out"
out=$("$PW" control "tcp://127.0.0.1:$P" set planner=vpipe 2>&1); [ $? = 1 ] && ok || bad "set refused" "$out"
out=$("$PW" control "tcp://127.0.0.1:$P" stop 2>&1) && ok || bad "stop" "$out"
wait $sim; rc=$?
[ "$rc" = 1 ] && ok || bad "stopped simulate exits 1, got $rc" "$(cat "$tmp/sim3.out")"
out=$("$PW" replay "$tmp/stop.sqlite" 2>&1); grep -q "stopped (stopped by control request)" <<<"$out" && ok || bad "stop recorded" "$out"

# 5. Errors.
out=$("$PW" watch "tcp://127.0.0.1:$(port)" --timeout 0.5 2>&1); rc=$?
[ "$rc" = 3 ] && grep -q "no telemetry" <<<"$out" && ok || bad "watch without a publisher: exit $rc" "$out"
out=$("$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://0.0.0.0:$(port)" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "refusing to bind" <<<"$out" && ok || bad "non-loopback bind needs --allow-remote: exit $rc" "$out"
out=$("$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://127.0.0.1:99999" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "port must be 0..65535" <<<"$out" && ok || bad "--listen port 99999 refused: exit $rc" "$out"
P=$(port)
$PY -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $P)); s.listen(); open('$tmp/held', 'w').close(); time.sleep(5)" & holder=$!
for i in $(seq 100); do [ -f "$tmp/held" ] && break; sleep 0.05; done
out=$("$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://127.0.0.1:$P" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "cannot bind" <<<"$out" && ok || bad "a port in use: exit $rc, want 2" "$out"
kill $holder 2>/dev/null; wait $holder 2>/dev/null
out=$("$PW" control "tcp://127.0.0.1:$(port)" frobnicate 2>&1); [ $? = 2 ] && ok || bad "unknown control command" "$out"

# 6. Beyond loopback only with CURVE: keys, the right key watches, no key sees nothing.
out=$("$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://0.0.0.0:$(port)" --allow-remote 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "without CURVE" <<<"$out" && ok || bad "--allow-remote without keys must be refused: exit $rc" "$out"
"$PW" keys "$tmp/keys" > /dev/null && [ "$(stat -c %a "$tmp/keys/server.key")" = 600 ] && ok || bad "keys: server.key mode 0600"
P=$(port)
"$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://0.0.0.0:$P" --allow-remote --curve-dir "$tmp/keys" \
  --pace 0.5 --linger 3 > "$tmp/curve.out" 2> "$tmp/curve.err" &
sim=$!
sleep 1
out=$("$PW" watch "tcp://127.0.0.1:$P" --timeout 1 2>&1); rc=$?
[ "$rc" = 3 ] && ok || bad "watch without keys must see no telemetry: exit $rc" "$out"
out=$("$PW" watch "tcp://127.0.0.1:$P" --timeout 5 --json --server-key "$tmp/keys/server.pub" --client-key "$tmp/keys/client.key" 2>&1); rc=$?
[ "$rc" = 0 ] && grep -q '"gaps": 0' <<<"$out" && ok || bad "watch with the right key: exit $rc" "$out"
wait $sim

# CURVE: a key directory or authorized_clients others can write is refused.
cp -r "$tmp/keys" "$tmp/keys2"
chmod 0666 "$tmp/keys2/authorized_clients"
out=$("$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://0.0.0.0:$(port)" --allow-remote --curve-dir "$tmp/keys2" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "authorized_clients is writable by group or others (mode 0666)" <<<"$out" && ok || bad "authorized_clients 0666 refused: exit $rc" "$out"
chmod 0644 "$tmp/keys2/authorized_clients"; chmod 0777 "$tmp/keys2"
out=$("$PW" simulate "$J/bert24-4gpu.json" --listen "tcp://0.0.0.0:$(port)" --allow-remote --curve-dir "$tmp/keys2" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "the key directory is writable by group or others (mode 0777)" <<<"$out" && ok || bad "key directory 0777 refused: exit $rc" "$out"
chmod 0700 "$tmp/keys2"

# SIGINT / SIGTERM of a recording simulate: the run is marked interrupted
# (never left running), the endpoints file is removed, exit 128 + signal.
for sig in INT TERM; do
  P=$(port)
  "$PW" simulate "$J/gpt32-8gpu.json" --db "$tmp/sig$sig.sqlite" --listen "tcp://127.0.0.1:$P" --pace 0.2 > "$tmp/sig.out" 2>&1 &
  sim=$!
  for i in $(seq 50); do [ -f "$tmp/sig$sig.endpoints.json" ] && break; sleep 0.1; done
  [ -f "$tmp/sig$sig.endpoints.json" ] && ok || bad "endpoints file written ($sig)"
  sleep 0.3
  kill -$sig $sim; wait $sim; rc=$?
  want=$([ $sig = INT ] && echo 130 || echo 143)
  [ "$rc" = "$want" ] && ok || bad "SIG$sig simulate exits $want, got $rc" "$(cat "$tmp/sig.out")"
  [ ! -e "$tmp/sig$sig.endpoints.json" ] && ok || bad "stale endpoints file after SIG$sig"
  out=$("$PW" replay "$tmp/sig$sig.sqlite" --json 2>&1)
  grep -q '"status": "interrupted"' <<<"$out" && grep -q "interrupted by SIG$sig" <<<"$out" && ok || bad "SIG$sig recorded as interrupted" "$out"
done

echo "$passed passed, $fail failed"
[ "$fail" = 0 ]
