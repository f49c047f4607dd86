#!/usr/bin/env bash
# The output rule (docs/cli.md "Output files", core/io/checked_write.h), for
# every option that writes a file: an existing run database, an existing
# text file and an unwritable directory each leave the file byte-for-byte as
# it was, exit 2 and name the option; --overwrite replaces a text file but
# never a run database; no temporary file is left behind. Options of layers
# this build lacks (keys: ZeroMQ; profile: libtorch) are checked where built.
set -u
PW=$(realpath "$1"); SRC="$2"
. "$SRC/tests/cli_checks.sh"
J="$SRC/resources/jobs"
U="$J/uniform-8stage.json"
NAS="$J/fmnist-supernet.json"
T=$(mktemp -d); trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
chmod 755 "$T"

# A real run database, in a folder any user may write (a reader of a WAL
# database creates its -shm file; the unwritable-directory cases run as
# nobody under root, cli_checks.sh).
mkdir -p "$T/pub"; chmod 1777 "$T/pub"
"$PW" simulate "$U" --db "$T/pub/run.sqlite" > /dev/null || { echo "FAIL: cannot record a run"; exit 1; }
chmod 644 "$T/pub/run.sqlite"

# trio NAME OPTION INNER command-with-@OUT@...: the cases for one option.
# @OUT@ becomes the output path; with INNER (keys DIR, --csv DIR) the path is
# a directory and the file checked is INNER inside it.
trio() {
  local name="$1" opt="$2" inner="$3"; shift 3
  local d="$T/$name"
  place() {  # case directory: sets OUT and FILE
    mkdir -p "$1"; chmod 755 "$1"; OUT="$1/out"; FILE="$OUT"
    if [ -n "$inner" ]; then mkdir -p "$OUT"; FILE="$OUT/$inner"; fi
  }
  place "$d/db"; cp "$T/pub/run.sqlite" "$FILE"
  refused_output "$name: existing run database" "$opt" "$FILE" "${@//@OUT@/$OUT}"
  refused_output "$name: existing run database, --overwrite" "$opt" "$FILE" "${@//@OUT@/$OUT}" --overwrite
  place "$d/text"; printf 'notes the user keeps\n' > "$FILE"
  refused_output "$name: existing text file" "$opt" "$FILE" "${@//@OUT@/$OUT}"
  local text="$FILE" text_out="$OUT"
  # An unwritable directory: even --overwrite cannot replace the file in it.
  place "$d/ro"; printf 'notes in a read-only folder\n' > "$FILE"; chmod 644 "$FILE"
  chmod 555 "$d/ro"; [ -n "$inner" ] && chmod 555 "$OUT"
  refused_output "$name: unwritable directory" "$opt" "$FILE" "${UNPRIVILEGED[@]}" "${@//@OUT@/$OUT}" --overwrite
  # --overwrite replaces a text file.
  local before; before=$(sha256sum < "$text")
  check "$name: --overwrite replaces a text file" 0 "${@//@OUT@/$text_out}" --overwrite
  if [ "$before" != "$(sha256sum < "$text")" ]; then passed=$((passed+1)); else echo "FAIL $name: --overwrite left the text file"; fail=$((fail+1)); fi
  # A new file: written, no temporary left.
  check "$name: a new file" 0 "${@//@OUT@/$d/new}"
  if [ -e "$d/new" ] && [ -z "$(find "$d" -name '*.tmp')" ]; then passed=$((passed+1)); else echo "FAIL $name: no new file or a *.tmp left"; fail=$((fail+1)); fi
}

# The issue's report: --trace onto a recorded run replaced it.
trio simulate-trace --trace "" "$PW" simulate "$U" --trace @OUT@
trio simulate-supernet-trace --trace "" "$PW" simulate "$NAS" --trace @OUT@
trio export-chrome-trace --chrome-trace "" "$PW" export "$T/pub/run.sqlite" --chrome-trace @OUT@
trio export-csv --csv events.csv "$PW" export "$T/pub/run.sqlite" --csv @OUT@
trio launch-output --output "" "$PW" launch "$U" --hosts h1,h2 --output @OUT@
trio launch-sbatch --sbatch "" "$PW" launch "$U" --hosts h1,h2 --sbatch @OUT@
if "$PW" keys --help > /dev/null 2>&1; then
  trio keys "keys DIR" server.key "$PW" keys @OUT@
  # One existing file refuses them all: nothing else is written into DIR.
  mkdir -p "$T/keys-partial"; printf 'mine\n' > "$T/keys-partial/client.pub"
  check "keys: one existing file refuses all" 2 "$PW" keys "$T/keys-partial"
  if [ "$(ls "$T/keys-partial")" = client.pub ]; then passed=$((passed+1)); else echo "FAIL keys: wrote beside an existing file: $(ls "$T/keys-partial")"; fail=$((fail+1)); fi
fi
if "$PW" profile --help > /dev/null 2>&1; then
  MLP="$SRC/tests/runtime/tiny-mlp.json"
  trio profile -o "" "$PW" profile "$MLP" --repeats 1 -o @OUT@
fi

# --trace and --db together: the same --overwrite, never the same file.
check "--trace and --db name one file" 2 "$PW" simulate "$U" --db "$T/same" --trace "$T/same"
check "--overwrite alone is refused" 2 "$PW" export "$T/pub/run.sqlite" --overwrite
expect_text "--overwrite names what it needs" 2 "--overwrite requires --chrome-trace or --csv" "$PW" export "$T/pub/run.sqlite" --overwrite
# The recorded run survived every attempt: it still replays.
check "the run database still replays" 0 "$PW" replay "$T/pub/run.sqlite"
checks_done
