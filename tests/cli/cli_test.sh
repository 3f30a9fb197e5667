#!/usr/bin/env bash
# End-to-end tests of the tenet executable: exit codes, messages, files. Needs $TENET and $SRC.
set -u
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check <name> <expected exit> <expected substring of stdout+stderr> -- cmd...
  local name=$1 want_rc=$2 want_text=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL $name: exit $rc, expected $want_rc"; echo "$out" | head -5; fail=$((fail + 1)); return
  fi
  if [[ -n $want_text && $out != *"$want_text"* ]]; then
    echo "FAIL $name: output lacks '$want_text'"; echo "$out" | head -5; fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
}

T=$TENET
check "help" 0 "topo" -- "$T" --help
check "topo help" 0 "convert" -- "$T" topo --help
check "info help" 0 "--size" -- "$T" topo info --help
check "no verb" 2 "" -- "$T"
check "unknown verb" 2 "" -- "$T" frobnicate
check "unknown flag" 2 "" -- "$T" topo info ring:4 --bogus
check "info spec" 0 "cut bound" -- "$T" topo info torus2d:4x4
check "info example" 0 "6.857x" -- "$T" topo info "$SRC/examples/topologies/two-islands.yaml"
check "info json" 0 '"cut_bound_ps"' -- "$T" topo info ring:8 --json
check "info size" 0 "All-Gather of 64 MiB" -- "$T" topo info ring:8 --size 64MiB
check "info size no unit" 2 "has no unit" -- "$T" topo info ring:8 --size 64
check "generators" 0 "torus2d" -- "$T" topo generators
check "generators md" 0 "| generator" -- "$T" topo generators --markdown
check "missing file" 2 "error: nope.yaml: cannot open file" -- "$T" topo info nope.yaml
check "bad spec" 2 "error: in spec 'torus2d:4'" -- "$T" topo info torus2d:4

# A bad file: the error names file and line, exit 2, and no output is written.
printf 'npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 50, lat: 1us}\n' > "$tmp/bad.yaml"
check "bad file line" 2 "error: $tmp/bad.yaml:3:" -- "$T" topo convert "$tmp/bad.yaml" -o "$tmp/out.yaml"
if [[ -e $tmp/out.yaml ]]; then echo "FAIL bad file left output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check "bad output ext" 2 "unknown output format" -- "$T" topo convert ring:4 -o "$tmp/out.txt"
if compgen -G "$tmp/out.txt*" > /dev/null; then echo "FAIL bad ext left a file"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# Conversions chain and come back to the same topology (fingerprint and link count).
spec="ring:4,bw=300GB/s x switch:2,bw=50GB/s"
check "to yaml" 0 "wrote" -- "$T" topo convert "$spec" -o "$tmp/a.yaml"
check "to json" 0 "wrote" -- "$T" topo convert "$tmp/a.yaml" -o "$tmp/a.json"
check "to dot" 0 "wrote" -- "$T" topo convert "$tmp/a.json" -o "$tmp/a.dot"
check "back to yaml" 0 "wrote" -- "$T" topo convert "$tmp/a.dot" -o "$tmp/b.yaml"
fp() { "$T" topo info "$1" --json | grep -E '"(fingerprint|links)"'; }
if [[ "$(fp "$spec")" == "$(fp "$tmp/b.yaml")" ]]; then pass=$((pass + 1)); else
  echo "FAIL round trip changed the topology"; fail=$((fail + 1)); fi
if diff -q <(sed 1d "$tmp/a.yaml" | grep -v '^name:') <(sed 1d "$tmp/b.yaml" | grep -v '^name:') > /dev/null; then
  pass=$((pass + 1)); else echo "FAIL yaml differs after the round trip"; fail=$((fail + 1)); fi

# verify: exit 0 when correct, 3 when incorrect, 2 for bad input.
ALGO=$SRC/examples/algorithms
check "verify help" 0 "--topo" -- "$T" verify --help
check "verify correct" 0 "CORRECT" -- "$T" verify "$ALGO/ring-allgather-4.json" --topo "ring:4,bidir=false"
check "verify ratio" 0 "ratio 1.0158" -- "$T" verify "$ALGO/ring-allgather-4.json" --topo "ring:4,bidir=false"
check "verify broken" 3 "source-lacks-data" -- "$T" verify "$ALGO/broken-ring-allgather-4.json" --topo "ring:4,bidir=false"
check "verify broken names arrival" 3 "it arrives there at 21.47 us (transfer 3)" -- "$T" verify "$ALGO/broken-ring-allgather-4.json" --topo "ring:4,bidir=false"
check "verify json" 3 '"correct": false' -- "$T" verify "$ALGO/broken-ring-allgather-4.json" --topo "ring:4,bidir=false" --json
check "verify verbose" 3 "postcondition-unmet" -- "$T" verify "$ALGO/broken-ring-allgather-4.json" --topo "ring:4,bidir=false" --verbose
check "verify wrong topology" 3 "fingerprint-mismatch" -- "$T" verify "$ALGO/ring-allgather-4.json" --topo "ring:4"
check "verify needs topo" 2 "" -- "$T" verify "$ALGO/ring-allgather-4.json"
check "verify missing file" 2 "cannot open file" -- "$T" verify "$tmp/none.json" --topo ring:4
printf '{"format": "tenet-algorithm",\n "version": 1,,\n}\n' > "$tmp/bad.json"
check "verify bad json" 2 "error: $tmp/bad.json:2:" -- "$T" verify "$tmp/bad.json" --topo ring:4
sed 's/"chunk": 3, "src": 3/"chunk": 9, "src": 3/' "$ALGO/ring-allgather-4.json" > "$tmp/chunk.json"
check "verify chunk out of range" 2 "chunk 9 is out of range" -- "$T" verify "$tmp/chunk.json" --topo "ring:4,bidir=false"

for f in "$SRC"/examples/topologies/*; do
  check "example $(basename "$f")" 0 "cut bound" -- "$T" topo info "$f"
done

echo "cli: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
