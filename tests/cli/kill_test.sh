#!/usr/bin/env bash
# kill -9 at random moments of the commands that write an output folder (synth --emit, export,
# bench). After each kill the folder holds the old complete set or the new complete set of files
# (topo/output_folder.hpp); a kill inside the commit's renames leaves a journal, and then a Tenet
# command that reads the folder refuses it (changing nothing) and the next run that writes it
# completes the new set first. The next run into the folder leaves nothing of the killed one
# behind. Needs $TENET. KILL_TEST_SEED picks the moments.
set -u
T=$TENET
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RANDOM=${KILL_TEST_SEED:-23}
fail=0 kills=0 old_seen=0 new_seen=0 journals=0

# The files of folder $1 with checksums, hidden ones included except a killed run's staging folder
# and a journal it was still writing (neither is part of the set; the next writer removes both). $2: a sed filter for lines that vary
# between runs of one command (bench timings).
sums() {
  (cd "$1" && find . \( -path './.tenet-stage.*' -o -name '.tenet-commit-tmp.*' \) -prune -o -type f -print | LC_ALL=C sort | while read -r f; do
    printf '%s %s\n' "$(sed -E "${2:-}" "$f" | sha256sum | cut -c1-16)" "$f"
  done)
}
ms() { date +%s%3N; }

# kill_case NAME ITERATIONS FILTER READ... -- OLD... -- NEW...: every argument @OUT@ is the folder;
# READ is a Tenet command that reads it.
kill_case() {
  local name=$1 iterations=$2 filter=$3
  shift 3
  local settle=() old=() new=()
  while [[ $1 != -- ]]; do settle+=("$1"); shift; done
  shift
  while [[ $1 != -- ]]; do old+=("$1"); shift; done
  shift
  new=("$@")
  local ref_old=$tmp/$name-old ref_new=$tmp/$name-new out=$tmp/$name-out
  "${old[@]//@OUT@/$ref_old}" > /dev/null 2>&1 || { echo "FAIL $name: the old command failed"; fail=$((fail + 1)); return; }
  local t0; t0=$(ms)
  "${new[@]//@OUT@/$ref_new}" > /dev/null 2>&1 || { echo "FAIL $name: the new command failed"; fail=$((fail + 1)); return; }
  local took=$(( $(ms) - t0 + 20 ))
  local want_old want_new; want_old=$(sums "$ref_old" "$filter"); want_new=$(sums "$ref_new" "$filter")
  [[ $want_old != "$want_new" ]] || { echo "FAIL $name: old and new sets are the same"; fail=$((fail + 1)); return; }
  for ((i = 0; i < iterations; i++)); do
    rm -rf "$out"; cp -a "$ref_old" "$out"
    "${new[@]//@OUT@/$out}" > /dev/null 2>&1 &
    local pid=$! delay=$((RANDOM % took))
    sleep "$(printf '0.%03d' "$delay")"
    kill -9 "$pid" 2> /dev/null && kills=$((kills + 1))
    wait "$pid" 2> /dev/null
    local got; got=$(sums "$out" "$filter")
    if compgen -G "$out/.tenet-commit.*" > /dev/null; then
      journals=$((journals + 1))
      if "${settle[@]//@OUT@/$out}" > /dev/null 2>&1; then
        echo "FAIL $name: a reader read a folder a killed commit left mixed"; fail=$((fail + 1)); return
      fi
      [[ $(sums "$out" "$filter") == "$got" ]] || { echo "FAIL $name: a reader changed the folder"; fail=$((fail + 1)); return; }
      "${new[@]//@OUT@/$out}" > /dev/null 2>&1  # the next write completes the commit, then its own
      got=$(sums "$out" "$filter")
    fi
    if [[ $got == "$want_old" ]]; then old_seen=$((old_seen + 1))
    elif [[ $got == "$want_new" ]]; then new_seen=$((new_seen + 1))
    else
      echo "FAIL $name: killed after ${delay} ms, the folder is neither set:"; diff <(echo "$want_new") <(echo "$got") | head -40
      fail=$((fail + 1))
      return
    fi
  done
  # The next run into the folder completes, and nothing of the killed runs stays.
  "${new[@]//@OUT@/$out}" > /dev/null 2>&1
  local left; left=$(cd "$out" && find . -name '.tenet-*' -o -name '*.tenet-tmp.*')
  [[ -z $left ]] || { echo "FAIL $name: left behind: $left"; fail=$((fail + 1)); }
  [[ $(sums "$out" "$filter") == "$want_new" ]] || { echo "FAIL $name: the last run's set differs"; fail=$((fail + 1)); }
}

settle=("$T" verify @OUT@/algorithm.json --topo torus2d:4x4)
kill_case synth 10 "" "${settle[@]}" -- \
  "$T" synth --topo torus2d:4x4 --coll all-reduce --size 1MiB -k 1 --emit json,chakra,msccl-xml -o @OUT@ -- \
  "$T" synth --topo torus2d:4x4 --coll all-reduce --size 4MiB -k 2 --emit json,chakra,msccl-xml -o @OUT@

"$T" synth --topo torus2d:4x4 --coll all-gather --size 1MiB -k 1 -o "$tmp/alg1" > /dev/null
"$T" synth --topo torus2d:4x4 --coll all-gather --size 8MiB -k 2 -o "$tmp/alg2" > /dev/null
kill_case export 10 "" "${settle[@]}" -- \
  "$T" export "$tmp/alg1/algorithm.json" --topo torus2d:4x4 --format json,chakra,msccl-xml -o @OUT@ -- \
  "$T" export "$tmp/alg2/algorithm.json" --topo torus2d:4x4 --format json,chakra,msccl-xml -o @OUT@

printf 'name: old\ntopologies: [ring:4]\ncollectives: [all-gather]\nsizes: [1MiB]\nalgorithms: [tenet, ring]\n' > "$tmp/old.yaml"
printf 'name: new\ntopologies: [ring:6, ring:8]\ncollectives: [all-gather]\nsizes: [1MiB, 4MiB]\nalgorithms: [tenet, ring]\n' > "$tmp/new.yaml"
# Build times and dates vary between runs: checksums ignore digits.
kill_case bench 4 "s/[0-9]//g" "$T" topo info @OUT@/report.md -- \
  "$T" bench "$tmp/old.yaml" -o @OUT@ -- "$T" bench "$tmp/new.yaml" -o @OUT@

# Two runs writing one folder at once leave exactly one run's set (the last to commit), never a
# mixture of their Chakra ranks (16 of one, 8 of the other).
a=("$T" synth --topo torus2d:4x4 --coll all-gather --size 1MiB -k 1 --emit chakra,msccl-xml -o)
b=("$T" synth --topo ring:8 --coll all-gather --size 2MiB -k 1 --emit chakra -o)
"${a[@]}" "$tmp/ref-a" > /dev/null 2>&1; "${b[@]}" "$tmp/ref-b" > /dev/null 2>&1
want_a=$(sums "$tmp/ref-a"); want_b=$(sums "$tmp/ref-b"); both_seen=0
for ((i = 0; i < 6; i++)); do
  rm -rf "$tmp/both"; mkdir -p "$tmp/both"
  "${a[@]}" "$tmp/both" > /dev/null 2>&1 & pa=$!
  "${b[@]}" "$tmp/both" > /dev/null 2>&1 & pb=$!
  wait $pa $pb
  got=$(sums "$tmp/both")
  if [[ $got == "$want_a" || $got == "$want_b" ]]; then both_seen=$((both_seen + 1))
  else echo "FAIL two writers: the folder mixes both runs:"; diff <(echo "$want_a") <(echo "$got") | head -20; fail=$((fail + 1)); break
  fi
done

echo "kill -9 test: $kills kills; folder then held the old set $old_seen times, the new set $new_seen times" \
  "($journals refused by a reader, then completed by the next write); two writers at once left one" \
  "run's set $both_seen times; $fail failures"
[[ $fail -eq 0 && $kills -gt 0 ]]
