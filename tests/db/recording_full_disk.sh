#!/usr/bin/env bash
# A recording that cannot be written (issue 41, item 8): `simulate --db` under
# a file-size limit (`ulimit -f`, which fails the write with EFBIG: pipewright
# ignores SIGXFSZ) prints the system's reason, and leaves no dead end: a
# database that could not be created is removed (with its -wal, -shm), and
# one that filled up later is a recording that opens and that --overwrite
# replaces.
set -u
PW="$1"; SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
tmp=$(mktemp -d); trap 'umount "$tmp/tmpfs" 2>/dev/null; rm -rf "$tmp"' EXIT

# 64 KiB: smaller than the schema alone, so the database is never created.
expect_text "a database that cannot be created says why" 1 "File too large" \
  bash -c 'ulimit -f 64; exec "$0" simulate "$1" --db "$2"' "$PW" "$J/tiny-lm-4stage.json" "$tmp/small.sqlite"
left=$(find "$tmp" -maxdepth 1 -name 'small.sqlite*' | wc -l)
[ "$left" = 0 ] && passed=$((passed+1)) || { echo "FAIL a database that could not be created is left behind: $(ls "$tmp")"; fail=$((fail+1)); }
check "the same --db then records (no --overwrite needed)" 0 "$PW" simulate "$J/tiny-lm-4stage.json" --db "$tmp/small.sqlite"

# 1 MiB: the database is created, and the run (~2.7 MB of events) fills the limit midway.
big=(simulate "$J/uniform-8stage.json" --set training.batch_size=4096)
expect_text "a recording that fills the disk says why" 1 "File too large" \
  bash -c 'ulimit -f 1024; exec "$@"' limited "$PW" "${big[@]}" --db "$tmp/full.sqlite"
expect_text "what it recorded opens and says it failed" 0 "failed (the database stopped recording" "$PW" replay "$tmp/full.sqlite"
check "--overwrite replaces it" 0 "$PW" "${big[@]}" --db "$tmp/full.sqlite" --overwrite

# A full file system, where one can be mounted (root): the same, with ENOSPC.
mnt="$tmp/tmpfs"; mkdir -p "$mnt"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m tmpfs "$mnt" 2>/dev/null; then
  expect_text "a full disk says why" 1 "No space left on device" "$PW" simulate "$J/uniform-8stage.json" \
    --set training.batch_size=16384 --db "$mnt/full.sqlite"
  expect_text "what it recorded on the full disk opens" 0 "failed (the database stopped recording" "$PW" replay "$mnt/full.sqlite"
  umount "$mnt"
fi
checks_done
