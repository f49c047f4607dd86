#!/bin/bash
# A search result to ship (issue 23), end to end on real workers: a short
# supernet run with --db; `pipewright search RUN.sqlite` stores every scored
# subnet with its predicted latency and marks the accuracy/latency front
# (checked here against the definition, pair by pair); `export-subnet`
# writes TorchScript that Python's torch.jit.load runs on the held-out
# images, read here from the IDX files with Python's own code, to the
# accuracy the search stored (1e-6) and with the parameter count it stored.
# Refusals: a run that is not a supernet run, an unknown id, a bad choice.
# usage: search_export.sh PIPEWRIGHT NAS_WORKER SOURCE_DIR
set -u
PW=$1; export PW_NAS_WORKER=$2; SRC=$3
source "$SRC/tests/cli_checks.sh"
$PY -c "import torch" 2>/dev/null || { echo "SKIP: /usr/bin/python3 has no torch (python3-torch) to load the model"; exit 77; }
DATA=/usr/share/datasets/fashion-mnist
[ -e "$DATA/t10k-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $DATA"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
NAS=$SRC/resources/jobs/fmnist-supernet.json
SETS=(--set training.iterations=80 --set data.train_samples=2560 --set data.test_samples=300)
DB=$T/run.sqlite

check "supernet run" 0 "$PW" run "$NAS" --db "$DB" --run-dir "$T/run" --quiet "${SETS[@]}"
# Run from another folder: the database alone finds the weights.
(cd / && check "search RUN.sqlite" 0 "$PW" search "$DB" --set search_space.search.evaluations=20 \
   --set search_space.search.population=8)
expect_text "search prints the front" 0 "accuracy / predicted latency front" "$PW" search "$DB" \
  --set search_space.search.evaluations=12 --set search_space.search.population=6

py_check "stored searches: front by definition, latency from the job's FLOPs" "
import sqlite3, json
c = sqlite3.connect('$DB')
assert int(c.execute(\"SELECT value FROM meta WHERE key='schema_minor'\").fetchone()[0]) >= 1  # searches: 1.1 on
s = c.execute('SELECT id, method, validation_samples, device, microbatch FROM searches ORDER BY id').fetchall()
assert [m for _, m, *_ in s] == ['evolution', 'random', 'evolution', 'random'], s
assert all(v == 300 and mb == 32 and dev == 'custom' for _, _, v, dev, mb in s), s
counts = [c.execute('SELECT count(*) FROM search_subnets WHERE search=?', (i,)).fetchone()[0] for i, *_ in s]
assert counts == [20, 20, 12, 12], counts
# fmnist-supernet: 16 channels, 14x14 cells, microbatch 32, 0.05 TFLOP/s; kernels 3,5,7 x widths 16,32, identity.
ms = lambda f: f / 0.05e12 * 1e3
cells = [(k, w) for k in (3, 5, 7) for w in (16, 32)]
def latency(ch):
    t = ms(2*32*9*16*28*28) + ms(2*32*16*196*10)
    for x in ch:
        if x < 6: k, w = cells[x]; t += ms(2*32*196*(k*k*16*w + w*16))
    return t
def params(ch):
    n = 16*9 + 16 + 10*16*196 + 10
    for x in ch:
        if x < 6: k, w = cells[x]; n += k*k*16*w + w + w*16 + 16
    return n
for sid, *_ in s:
    rows = c.execute('SELECT choices_json, accuracy, latency_ms, parameters, pareto FROM search_subnets WHERE search=? ORDER BY ord', (sid,)).fetchall()
    pts = [(a, l) for _, a, l, _, _ in rows]
    for ch, a, l, p, f in rows:
        ch = json.loads(ch)
        assert abs(l - latency(ch)) < 1e-9 * max(1, l), (ch, l, latency(ch))
        assert p == params(ch), (ch, p, params(ch))
        assert 0 <= a <= 1
        dominated = any(b >= a and m <= l and (b > a or m < l) for b, m in pts)
        assert bool(f) == (not dominated), (sid, ch, a, l, f)
    assert any(f for *_, f in rows)
print('ok')
"

BEST_JSON=$($PY -c "
import sqlite3, json
c = sqlite3.connect('$DB')
sid = c.execute(\"SELECT max(id) FROM searches WHERE method='evolution'\").fetchone()[0]
r = sorted(c.execute('SELECT accuracy, -latency_ms, id, choices_json, parameters FROM search_subnets WHERE search=?', (sid,)).fetchall())[-1]
print(json.dumps({'accuracy': r[0], 'id': r[2], 'choices': json.loads(r[3]), 'parameters': r[4]}))
")
OTHER_JSON=$($PY -c "
import sqlite3, json
c = sqlite3.connect('$DB')
r = c.execute('SELECT id, accuracy, choices_json, parameters FROM search_subnets WHERE search=1 AND pareto=1 ORDER BY latency_ms LIMIT 1').fetchone()
print(json.dumps({'id': r[0], 'accuracy': r[1], 'choices': json.loads(r[2]), 'parameters': r[3]}))
")
OTHER_ID=$($PY -c "import json; print(json.loads('$OTHER_JSON')['id'])")

check "export best" 0 "$PW" export-subnet "$DB" --subnet best -o "$T/best.pt"
check "export by id" 0 "$PW" export-subnet "$DB" --subnet "$OTHER_ID" --out "$T/fast.pt"
LIST=$($PY -c "import json; print(json.loads('$OTHER_JSON')['choices'])" | tr -d ' ')
check "export by choice list" 0 "$PW" export-subnet "$DB" --subnet "$LIST" -o "$T/list.pt"

EVAL="
import gzip, json, torch
torch.set_num_threads(1)
def idx(path, off):
    return gzip.open(path).read()[off:]
n = 300
img = torch.frombuffer(bytearray(idx('$DATA/t10k-images-idx3-ubyte.gz', 16)), dtype=torch.uint8)[:n*784]
x = img.reshape(n, 1, 28, 28).float() / 255.0
y = torch.frombuffer(bytearray(idx('$DATA/t10k-labels-idx1-ubyte.gz', 8)), dtype=torch.uint8)[:n].long()
def accuracy(path):
    m = torch.jit.load(path).eval()
    with torch.no_grad():
        correct = sum(int((m(x[i:i+500]).argmax(1) == y[i:i+500]).sum()) for i in range(0, n, 500))
    return correct / n, sum(p.numel() for p in m.parameters()), m
"
py_check "best.pt: loads in Python, stored accuracy and parameters" "$EVAL
want = json.loads('$BEST_JSON')
acc, params, m = accuracy('$T/best.pt')
assert abs(acc - want['accuracy']) < 1e-6, (acc, want)
assert params == want['parameters'], (params, want)
assert acc > 0.2, acc  # trained: twice the 10% of chance at least
print(acc, params)
"
py_check "fast.pt and list.pt: the same subnet, its stored accuracy" "$EVAL
want = json.loads('$OTHER_JSON')
for f in ('$T/fast.pt', '$T/list.pt'):
    acc, params, m = accuracy(f)
    assert abs(acc - want['accuracy']) < 1e-6, (f, acc, want)
    assert params == want['parameters'], (f, params, want)
"

# Refusals, exit 2 with the reason.
check "simulated ordinary job" 0 "$PW" simulate "$SRC/resources/jobs/gpt32-8gpu.json" --db "$T/plain.sqlite" --json
check "search: not a supernet run" 2 "$PW" search "$T/plain.sqlite"
expect_text "search: says why" 2 "not a supernet run" "$PW" search "$T/plain.sqlite"
check "export: not a supernet run" 2 "$PW" export-subnet "$T/plain.sqlite" -o "$T/x.pt"
check "export: unknown id" 2 "$PW" export-subnet "$DB" --subnet 999999 -o "$T/x.pt"
check "export: choice out of range" 2 "$PW" export-subnet "$DB" --subnet "[0,1,2,9]" -o "$T/x.pt"
check "export: no -o" 2 "$PW" export-subnet "$DB"
[ -e "$T/x.pt" ] && { echo "FAIL: a refused export wrote a file"; fail=$((fail+1)); }

# The output rule (docs/cli.md "Output files"): -o never replaces a run
# database, an existing file only with --overwrite, and a directory it cannot
# write into leaves the file there as it was; checked before the worker starts.
chmod 755 "$T"
check "export: -o the run database itself" 2 "$PW" export-subnet "$DB" -o "$DB" --overwrite
refused_output "export: -o onto another run database" --out "$T/plain.sqlite" "$PW" export-subnet "$DB" -o "$T/plain.sqlite" --overwrite
printf 'my notes\n' > "$T/mine.pt"
refused_output "export: -o onto an existing file" --out "$T/mine.pt" "$PW" export-subnet "$DB" -o "$T/mine.pt"
mkdir "$T/ro"; printf 'kept\n' > "$T/ro/m.pt"; chmod 555 "$T/ro"
refused_output "export: -o into an unwritable directory" --out "$T/ro/m.pt" "${UNPRIVILEGED[@]}" "$PW" export-subnet "$DB" -o "$T/ro/m.pt" --overwrite
chmod 755 "$T/ro"
check "export: --overwrite replaces a file" 0 "$PW" export-subnet "$DB" --subnet best -o "$T/mine.pt" --overwrite
py_check "export: the replaced file is the model" "$EVAL
acc, params, m = accuracy('$T/mine.pt')
assert params == json.loads('$BEST_JSON')['parameters'], params
"
checks_done
