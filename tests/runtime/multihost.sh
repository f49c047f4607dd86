#!/bin/bash
# Two "hosts" x two stages: network namespaces joined by a veth pair (where
# this test may create them: root with iproute2), each namespace running two
# pipewright-worker processes started the torchrun way (MASTER_ADDR,
# MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, GLOO_SOCKET_IFNAME) and a
# coordinator attached in the first. Activations and gradients cross the
# namespaces over Gloo. The trained weights must equal a single-host run's.
# Without namespaces it runs the same attach path over loopback.
# With "replicas": two stages x two replicas (parallel.data), one replica per
# host (RANK = stage x 2 + replica: ranks 0 and 2 on the first, 1 and 3 on
# the second), so the gradients' all-reduce crosses the hosts.
# usage: multihost.sh PIPEWRIGHT WORKER JOB.json [replicas]   (exit 77: skipped)
set -u
PW=$1; WORKER=$2; JOB=$3; MODE=${4:-stages}
T=$(mktemp -d)
NA=pwtest-a-$$; NB=pwtest-b-$$
NETNS=0
cleanup() {
  [ -n "${PIDS:-}" ] && kill $PIDS 2>/dev/null
  if [ $NETNS = 1 ]; then ip netns del $NA 2>/dev/null; ip netns del $NB 2>/dev/null; fi
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done; exit 1; }
PY=/usr/bin/python3
$PY -c "import torch" 2>/dev/null || { echo "SKIP: /usr/bin/python3 has no torch (python3-torch) to compare weights"; exit 77; }

SETS=(--set "model.widths=[32,32,32]" --set pipeline.stages=4 --set cluster.devices=4 --set training.iterations=8)
STAGES=4; RANKS_A="0 1"; RANKS_B="2 3"
if [ "$MODE" = replicas ]; then
  SETS=(--set "model.widths=[32,32,32]" --set pipeline.stages=2 --set parallel.data=2 --set cluster.devices=4
        --set training.batch_size=32 --set training.iterations=8)
  STAGES=2; RANKS_A="0 2"; RANKS_B="1 3"
fi

if [ "$(id -u)" = 0 ] && command -v ip > /dev/null && ip netns add $NA 2>/dev/null; then
  NETNS=1
  ip netns add $NB || fail "ip netns add"
  ip link add veth-$$a type veth peer name veth-$$b || fail "veth pair"
  ip link set veth-$$a netns $NA && ip link set veth-$$b netns $NB || fail "veth into namespaces"
  ip -n $NA addr add 10.213.7.1/24 dev veth-$$a && ip -n $NB addr add 10.213.7.2/24 dev veth-$$b || fail "addresses"
  for n in $NA $NB; do ip -n $n link set lo up; done
  ip -n $NA link set veth-$$a up && ip -n $NB link set veth-$$b up || fail "links up"
  A=(ip netns exec $NA); B=(ip netns exec $NB)
  MASTER=10.213.7.1; IF_A=veth-$$a; IF_B=veth-$$b
  echo "hosts: network namespaces $NA (10.213.7.1) and $NB (10.213.7.2)"
else
  A=(); B=(); MASTER=127.0.0.1; IF_A=lo; IF_B=lo
  echo "hosts: loopback (no network namespaces here: not root or no iproute2)"
fi

PORT=$(( 20000 + ($$ % 20000) ))
"${A[@]}" "$PW" run "$JOB" "${SETS[@]}" --attach --port $PORT --run-dir "$T/multi" --quiet > "$T/coord.log" 2>&1 &
COORD=$!; PIDS="$COORD"
sleep 1
start() {  # namespace-command..., rank, local rank, interface
  local ifname=$1 rank=$2 local_rank=$3; shift 3
  env MASTER_ADDR=$MASTER MASTER_PORT=$PORT RANK=$rank WORLD_SIZE=4 LOCAL_RANK=$local_rank GLOO_SOCKET_IFNAME=$ifname \
    "$@" "$WORKER" > "$T/worker$rank.log" 2>&1 &
  PIDS="$PIDS $!"
}
l=0; for r in $RANKS_A; do start $IF_A $r $l "${A[@]}"; l=$((l + 1)); done
l=0; for r in $RANKS_B; do start $IF_B $r $l "${B[@]}"; l=$((l + 1)); done
wait $COORD || fail "the attached multi-host run failed"
PIDS=""

"$PW" run "$JOB" "${SETS[@]}" --run-dir "$T/single" --quiet > "$T/single.log" 2>&1 || fail "single-host run failed"

$PY "$(dirname "$0")/compare_weights.py" "$T/multi" "$T/single" $STAGES || fail "the multi-host run's weights differ from the single-host run's"
echo "PASS"
