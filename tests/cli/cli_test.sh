#!/usr/bin/env bash
# End-to-end tests of the tenet executable: exit codes, messages, files. Needs $TENET and $SRC.
set -u
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The algorithm cache's default folder ($XDG_CACHE_HOME/tenet): the test's own, never the user's.
export XDG_CACHE_HOME="$tmp/xdg"

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
check "info symmetry" 0 "looks the same from every NPU: translations of Z8 x Z4" -- "$T" topo info nvcluster:4x8,net=rail
check "info no symmetry" 0 "symmetry      none found" -- "$T" topo info mesh2d:4x4
check "info symmetry json" 0 '"translations": "Z4 x Z4"' -- "$T" topo info torus2d:4x4 --json
check "info size" 0 "All-Gather of 64 MiB" -- "$T" topo info ring:8 --size 64MiB
check "info size no unit" 2 "has no unit" -- "$T" topo info ring:8 --size 64
check "generators" 0 "torus2d" -- "$T" topo generators
check "generators md" 0 "| generator" -- "$T" topo generators --markdown
check "random fabric info" 0 "8 NPUs (0 with routers), 4 switches" -- "$T" topo info random-fabric:184
check "random fabric no bw" 2 "draws its own bandwidths and latencies" -- "$T" topo info random-fabric:184,bw=50GB/s
check "missing file" 2 "error: nope.yaml: cannot open file" -- "$T" topo info nope.yaml
check "bad spec" 2 "error: in spec 'torus2d:4'" -- "$T" topo info torus2d:4
# Large topologies finish (linear past the exact cut search's budget) and say how far they searched.
check "info big ring" 0 "islands of wide links only" -- "$T" topo info ring:100000
check "info big switch" 0 "translations of Z55555" -- "$T" topo info switch:55555
check "info big json" 0 '"cut_search": "islands"' -- "$T" topo info hypercube:16384 --json
check "info exact json" 0 '"cut_search": "exact"' -- "$T" topo info ring:8 --json

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
# DOT carries no dimensions: compare everything else.
strip() { sed 1d "$1" | grep -v '^name:' | sed '/^dimensions:/,/^[a-z]/{/^dimensions:/d;/^  - /d}'; }
if diff -q <(strip "$tmp/a.yaml") <(strip "$tmp/b.yaml") > /dev/null; then
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

# synth: writes algorithm.json, prints time, bound, ratio, bandwidths; verifies its output.
check "synth help" 0 "--chunks-per-npu" -- "$T" synth --help
check "synth all-gather" 0 "verified        correct" -- "$T" synth --topo torus2d:4x4 --coll all-gather --size 16MiB -o "$tmp/s1"
check "synth step costs" 0 "step cost     300 ns .. 2.6 us per transfer" -- "$T" topo info nvcluster:2x4
check "info whole bound" 0 "whole bound    172.4 us  (cut bound 167.8 us + 2.6 us step + 2 us latency past the cut; as synth and verify print it)" -- "$T" topo info nvcluster:2x4 --size 64MiB
check "info whole bound no steps" 0 "as synth and verify print it, --step-costs off)" -- "$T" topo info nvcluster:2x4 --step-costs off
check "info whole bound json" 0 '"lower_bound_ps"' -- "$T" topo info ring:8 --json
# The algorithm cache: made, then read back (verified); --no-cache neither reads nor writes; a
# damaged entry is made again and replaced.
check "cache made" 0 "synthesis       " -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --cache "$tmp/cache" -o "$tmp/ca"
check "cache hit" 0 "read from the algorithm cache and verified" -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --cache "$tmp/cache" -o "$tmp/ca"
check "cache hit json" 0 '"from_cache": true' -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --cache "$tmp/cache" -o "$tmp/ca" --json
check "cache other size" 0 '"from_cache": false' -- "$T" synth --topo ring:4 --coll all-gather --size 2MiB --cache "$tmp/cache" -o "$tmp/ca" --json
check "no cache" 0 '"from_cache": false' -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --no-cache -o "$tmp/ca" --json
for entry in "$tmp"/cache/*.tenet; do echo "garbage" > "$entry"; done
check "cache damaged" 0 '"from_cache": false' -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --cache "$tmp/cache" -o "$tmp/ca" --json
check "cache replaced" 0 '"from_cache": true' -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --cache "$tmp/cache" -o "$tmp/ca" --json
check "cache default xdg" 0 '"from_cache": false' -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB -o "$tmp/ca" --json
if compgen -G "$tmp/xdg/tenet/*.tenet" > /dev/null; then pass=$((pass + 1)); else echo "FAIL cache default folder: nothing in \$XDG_CACHE_HOME/tenet"; fail=$((fail + 1)); fi
check "sim cache made" 0 "0 synthesized algorithms read from" -- "$T" sim -w resnet50 --topo ring:4 --cache "$tmp/simcache"
check "sim cache hit" 0 "synthesized algorithms read from $tmp/simcache (verified), 0 kept there" -- "$T" sim -w resnet50 --topo ring:4 --cache "$tmp/simcache"
# --time-limit: the best verified algorithm found by then, said so; malformed limits refused.
check "time limit" 0 "stopped early   at --time-limit 1ms" -- "$T" synth --topo leafspine:2x4 --coll all-reduce --size 64MiB --time-limit 1ms --no-cache -o "$tmp/tl"
check "time limit verified" 0 "CORRECT" -- "$T" verify "$tmp/tl/algorithm.json" --topo leafspine:2x4
check "time limit json" 0 '"stopped_early": true' -- "$T" synth --topo leafspine:2x4 --coll all-reduce --size 64MiB --time-limit 0.001 --no-cache -o "$tmp/tl" --json
check "time limit not reached" 0 '"stopped_early": false' -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB --time-limit 600 --no-cache -o "$tmp/tl" --json
for bad in 0 -1 abc 5parsecs 100000; do
  check "time limit $bad" 2 "--time-limit '$bad'" -- "$T" synth --topo ring:4 --time-limit "$bad" --no-cache -o "$tmp/tl"
done
check "sim time limit" 0 "stopped early   at --time-limit 1ms" -- "$T" sim -w resnet50 --topo leafspine:2x4 --time-limit 1ms --no-cache
# SIGINT during a long search: the best answer so far is written, whole, and verified.
rm -rf "$tmp/int"
# (nvcluster:32x8's All-Reduce of 1 GiB searches for about 12 s; cluster16.yaml's took 5 s before
# its rails were dealt, and can now end before the signal.)
"$T" synth --topo nvcluster:32x8 --coll all-reduce --size 1GiB --no-cache -o "$tmp/int" > "$tmp/int.out" 2>&1 &
synth_pid=$!
sleep 2
kill -INT "$synth_pid"
wait "$synth_pid"
int_rc=$?
if [[ $int_rc -eq 0 ]] && grep -q "stopped early   interrupted" "$tmp/int.out" && [[ -f "$tmp/int/algorithm.json" ]]; then
  pass=$((pass + 1))
else
  echo "FAIL interrupted synth: exit $int_rc"; head -5 "$tmp/int.out"; fail=$((fail + 1))
fi
check "interrupted verified" 0 "CORRECT" -- "$T" verify "$tmp/int/algorithm.json" --topo nvcluster:32x8
check "synth step costs off" 2 "--step-costs: 'maybe' is neither on nor off" -- "$T" synth --topo ring:4 --step-costs maybe -o "$tmp/sc"
check "synth target msccl" 0 "target          msccl (executor runtime): " -- "$T" synth --topo ring:4 --coll all-reduce --size 1MiB --target msccl -o "$tmp/tm"
check "synth target msccl xml" 0 "" -- test -s "$tmp/tm/algorithm.xml"
check "synth target msccl reads back" 0 "CORRECT" -- "$T" verify "$tmp/tm/algorithm.xml" --topo ring:4
check "synth target bad" 2 "--target: 'nccl' is none of tenet, msccl and astra-sim" -- "$T" synth --topo ring:4 --target nccl -o "$tmp/tm3"
check "synth target needs tenet" 2 "--target msccl searches every producer" -- "$T" synth --topo ring:4 --algo ring --target msccl -o "$tmp/tm4"
check "synth target astra-sim" 0 "target          astra-sim: 9 of 9 candidates timed as ASTRA-sim runs them; picked tenet at 1 chunks per NPU" -- "$T" synth --topo dgx-h100 --coll all-reduce --size 1GiB --target astra-sim -o "$tmp/ta"
check "synth target astra-sim bundle" 0 "" -- test -x "$tmp/ta/astra-sim/run.sh"
check "synth says which target" 0 "nvswitch is not a rank: a collective graph has nodes for ranks only (relays outside the communicator and in-network reduction cannot be expressed); --target astra-sim writes the fastest algorithm ASTRA-sim can run" -- "$T" synth --topo dgx-h100 --coll all-reduce --size 1GiB --emit astra-sim -o "$tmp/ta3"
check "synth target astra-sim none" 2 "--target astra-sim: ASTRA-sim runs no candidate; the first: " -- "$T" synth --topo line:6 --ranks 0,5 --coll all-gather --size 1MiB --target astra-sim -o "$tmp/ta2"
check "sim optimistic" 0 "(optimistic: links booked past their bandwidth; --network analytical-congestion shares them)" -- "$T" sim -w gpt3-175b --tp 4 --pp 2 --microbatches 4 -t leafspine:2x8,spines=1 --coll all-reduce=ring
check "synth wrote" 0 "CORRECT" -- "$T" verify "$tmp/s1/algorithm.json" --topo torus2d:4x4
check "synth ratio" 0 "ratio           1.0000" -- "$T" synth --topo mesh2d:4x4 --coll all-gather --size 64MiB -k 4 --step-costs off -o "$tmp/s2"
check "synth auto" 0 "(auto; tried 1:" -- "$T" synth --topo ring:4 --coll all-reduce --size 1MiB -k auto -o "$tmp/s3"
# auto's answer drained at full rate (synth/plans/full_rate_drain.hpp): said in the method, and in
# --json as the tail of the run it took.
check "synth drain" 0 "at their routes' full rate" -- "$T" synth --topo "$SRC/examples/topologies/mi250-box.yaml" --coll all-gather --size 256MiB --no-cache -o "$tmp/drain"
check "synth drain json" 0 '"full_rate_drain": ' -- "$T" synth --topo "$SRC/examples/topologies/mi250-box.yaml" --coll all-gather --size 256MiB --no-cache -o "$tmp/drain" --json
# An All-Reduce as its halves' own answers in turn (synth/plans/all_reduce.hpp): said in the method,
# and in --json.
check "synth halves' answers" 0 "method: the halves' own answers in turn (Reduce-Scatter: " -- "$T" synth --topo "$SRC/examples/topologies/hetero-asymmetric.yaml" --coll all-reduce --size 1MiB --no-cache -o "$tmp/halves"
check "synth halves' answers json" 0 '"halves_answers": true' -- "$T" synth --topo "$SRC/examples/topologies/hetero-asymmetric.yaml" --coll all-reduce --size 1MiB --no-cache -o "$tmp/halves" --json
check "synth auto alone" 0 "; plan-pipeline alone 128:" -- "$T" synth --topo "$SRC/examples/topologies/two-islands.yaml" --coll all-reduce --size 1GiB -o "$tmp/s3b"
check "synth hold" 0 "hold link model" -- "$T" synth --topo ring:4 --link-model hold -o "$tmp/s4"
check "synth restarts" 0 "4 restarts" -- "$T" synth --topo ring:4 --restarts 4 -o "$tmp/s5"
check "synth rooted" 0 "verified        correct" -- "$T" synth --topo switch:4 --coll broadcast --root 2 -o "$tmp/s6"
check "synth same seed same file" 0 "" -- cmp "$tmp/s1/algorithm.json" <("$T" synth --topo torus2d:4x4 --coll all-gather --size 16MiB -o "$tmp/s7" > /dev/null && cat "$tmp/s7/algorithm.json")
check "synth bad coll" 2 "unknown collective 'all-sum'" -- "$T" synth --topo ring:4 --coll all-sum -o "$tmp/x"
check "synth bad size" 2 "has no unit" -- "$T" synth --topo ring:4 --size 64 -o "$tmp/x"
check "synth bad chunks" 2 "whole number or auto" -- "$T" synth --topo ring:4 -k lots -o "$tmp/x"
check "synth chunks range" 2 "--chunks-per-npu must lie in [1, 1048576]" -- "$T" synth --topo ring:4 -k 0 -o "$tmp/x"
check "synth chunks too many" 2 "--chunks-per-npu must lie in [1, 1048576]" -- "$T" synth --topo ring:4 -k 2000000 -o "$tmp/x"
# -k auto's pipelines double past 4096 chunks (a Broadcast's are the root's): what it picks can be asked for.
check "synth chunks past 4096" 0 "8192 chunks of 128 B" -- "$T" synth --topo ring:4 --coll broadcast --size 1MiB -k 8192 --emit chakra -o "$tmp/k8k"
check "chakra past 4096 reads back" 0 "verdict       CORRECT" -- "$T" verify -t ring:4 "$tmp/k8k/chakra/algorithm"
check "synth bad root" 2 "root 7 is not a rank" -- "$T" synth --topo ring:4 --coll broadcast --root 7 -o "$tmp/x"
check "synth bad model" 2 "unknown link model" -- "$T" synth --topo ring:4 --link-model teleport -o "$tmp/x"
check "synth bad priority" 2 "unknown chunk priority" -- "$T" synth --topo ring:4 --priority best -o "$tmp/x"
if [[ -e $tmp/x ]]; then echo "FAIL bad synth left output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# What a new user mistypes: the nearest verb, flag, generator, preset or name is suggested.
check "typo verb" 2 "unknown command 'sythn' (did you mean 'synth'?)" -- "$T" sythn --topo ring:4
check "typo sub verb" 2 "unknown command 'infoo' (did you mean 'info'?)" -- "$T" topo infoo ring:4
check "typo flag" 2 "unknown option '--colll' of \`tenet synth\` (did you mean '--coll'?)" -- "$T" synth --colll all-reduce --topo ring:4 -o "$tmp/x"
check "typo flag after short value" 2 "did you mean '--size'?" -- "$T" synth --topo ring:4 -k4 --sizee 1MiB -o "$tmp/x"
check "typo generator with units" 2 "no generator 'rign'; nearest: ring" -- "$T" topo info "rign:4,bw=50GB/s,lat=0.5us"
check "typo generator" 2 "no generator 'torus'; nearest: torus2d (e.g. torus2d:" -- "$T" synth --topo torus:4x4 -o "$tmp/x"
check "generator without shape" 2 "'torus2d' is a generator without its shape: write it like torus2d:" -- "$T" topo info torus2d
check "typo preset" 2 "did you mean 'dgx-h100'" -- "$T" topo info dgx-h10
check "typo workload" 2 "not a model preset (did you mean 'gpt3-175b'?) (presets: resnet50, gpt3-175b" -- "$T" sim -w gpt3 --topo ring:4
check "typo collective" 2 "did you mean 'all-gather'?" -- "$T" synth --topo ring:4 -c all-gahter -o "$tmp/x"
check "typo algorithm" 2 "did you mean 'ring'?" -- "$T" synth --topo ring:4 -a rign -o "$tmp/x"
check "typo in suite" 2 "no generator 'torus'; nearest: torus2d" -- "$T" bench <(printf 'topologies: [torus:4x4]\ncollectives: [all-reduce]\nsizes: [1MiB]\n') -o "$tmp/x"
if [[ -e $tmp/x ]]; then echo "FAIL a typo left output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# Runtime protocols: a preset's ring runs LL at 1 MiB and Simple at 1 GiB; the files carry it and
# read back to the same time; topo info lists them.
check "info protocols" 0 "protocol      LL: 0.5 of every link's bandwidth carries data, 600 ns a step; no in-network reduction or multicast" -- "$T" topo info dgx-h100
check "synth protocol small" 0 "protocol        LL: 0.5 of every link's bandwidth" -- "$T" synth -t dgx-a100 -c all-reduce -s 1MiB --algo ring -o "$tmp/proto" --emit json,msccl-xml,chakra
check "synth protocol large" 0 "protocol        Simple: 1 of every link's bandwidth" -- "$T" synth -t dgx-a100 -c all-reduce -s 1GiB --algo ring -o "$tmp/proto-large"
check "protocol in xml" 0 'proto="LL"' -- cat "$tmp/proto/algorithm.xml"
proto_time=$("$T" verify -t dgx-a100 "$tmp/proto/algorithm.json" --json | jq -r .collective_time_ps)
check "protocol xml time" 0 "" -- jq -e ".collective_time_ps == $proto_time" <("$T" verify -t dgx-a100 "$tmp/proto/algorithm.xml" --json)
check "protocol chakra time" 0 "" -- jq -e ".collective_time_ps == $proto_time" <("$T" verify -t dgx-a100 "$tmp/proto/chakra/algorithm" --json)
check "protocol not listed" 3 "which topology" -- "$T" verify -t switch:8 "$tmp/proto/algorithm.json"

# Summaries for machines: --json parses and carries the numbers; --csv has a row per algorithm.
"$T" synth --topo ring:8 --coll all-gather --size 16MiB -k 2 --json -o "$tmp/j1" > "$tmp/j1.json"
check "synth json" 0 "" -- jq -e '.verified == true and .chunks_per_npu == 2 and .time_ps >= .lower_bound_ps and (.written | length) == 1' "$tmp/j1.json"
"$T" synth --topo switch:6 --coll all-reduce --size 16MiB --algo all --json -o "$tmp/j2" > "$tmp/j2.json"
check "synth all json" 0 "" -- jq -e '(.rows | map(select(.algorithm == "tenet"))[0].tenet_speed_up) == 1 and (.rows | map(select(.status == "not-applicable")) | length) >= 1 and (.rows | map(select(.status == "ok")) | all(.busbw_GBps > 0))' "$tmp/j2.json"
"$T" synth --topo switch:6 --coll all-reduce --size 16MiB --algo all --csv -o "$tmp/j3" > "$tmp/j3.csv"
check "synth all csv header" 0 "size_bytes,algorithm,status,time_ps,lower_bound_ps,ratio_to_bound,algbw_GBps,busbw_GBps" -- head -1 "$tmp/j3.csv"
if [[ $(grep -c '^16777216,' "$tmp/j3.csv") -eq $(jq '.rows | length' "$tmp/j2.json") ]]; then pass=$((pass + 1)); else
  echo "FAIL csv and json rows differ"; fail=$((fail + 1)); fi
check "synth json and csv" 2 "pick one" -- "$T" synth --topo ring:4 --json --csv -o "$tmp/x"

# nccl-tests-style size sweeps: a row per size, busbw = algbw x 2(p-1)/p for All-Reduce.
"$T" synth --topo ring:8 --coll all-reduce -b 1MiB -e 64MiB -f 4 --csv -o "$tmp/sw" > "$tmp/sw.csv"
if [[ $(cut -d, -f1 "$tmp/sw.csv" | tr '\n' ' ') == "size_bytes 1048576 4194304 16777216 67108864 " ]]; then pass=$((pass + 1)); else
  echo "FAIL sweep sizes: $(cut -d, -f1 "$tmp/sw.csv" | tr '\n' ' ')"; fail=$((fail + 1)); fi
check "sweep busbw" 0 "" -- awk -F, 'NR > 1 { r = $8 / $7; if (r < 1.7499 || r > 1.7501) exit 1 }' "$tmp/sw.csv"
check "sweep files" 0 "" -- test -s "$tmp/sw/tenet-1MiB.json" -a -s "$tmp/sw/tenet-64MiB.json"
check "sweep table" 0 "| 64 MiB | tenet" -- "$T" synth --topo ring:8 --coll all-reduce -b 1MiB -e 64MiB -f 4 -o "$tmp/sw2"
check "sweep needs both" 2 "needs both -b/--min-size and -e/--max-size" -- "$T" synth --topo ring:8 -b 1MiB -o "$tmp/x"
check "sweep backwards" 2 "is below --min-size" -- "$T" synth --topo ring:8 -b 1GiB -e 1MiB -o "$tmp/x"
check "sweep emit" 2 "--emit exports one algorithm" -- "$T" synth --topo ring:8 -b 1MiB -e 4MiB --emit chakra -o "$tmp/x"

# The progress bar (on a terminal) is erased before the summary: no output line starts after its
# last frame. `script` gives the command a terminal.
if command -v script > /dev/null; then
  TENET_PROGRESS_AFTER=0 script -qec "'$T' synth --topo torus2d:4x4 --coll all-gather --size 16MiB -k 2 -o '$tmp/pb'" /dev/null > "$tmp/pb.txt"
  if grep -q "synthesizing \[" "$tmp/pb.txt" && grep -q $'\r *\rtopology  ' "$tmp/pb.txt" && ! grep -q '[0-9] stopology' "$tmp/pb.txt"; then
    pass=$((pass + 1)); else echo "FAIL progress bar not erased: $(head -c 300 "$tmp/pb.txt" | od -c | head -5)"; fail=$((fail + 1)); fi
fi

# The lower bound's parts add up to it (latency-bound at tiny sizes), with the per-step costs the
# transfers pay (torus links: 300 ns): the farthest pair (4 hops of 500 ns) pays one, the arrivals'
# bytes one before they flow; without steps, neither. The buffer, which depends on the pair's one
# end, then enters the other through its four 50 GB/s links in (4 KiB: 20.48 ns).
check "bound parts" 0 "2.32 us  (latency and steps of the farthest pair that must communicate + 20.48 ns for what depends on it to enter an NPU; arrivals bound 38.4 ns + 300 ns step + 500 ns latency is less)" -- "$T" synth --topo torus2d:4x4 --coll all-reduce --size 4KiB -k 1 -o "$tmp/lb"
check "bound parts without steps" 0 "2.02 us  (latency of the farthest pair that must communicate + 20.48 ns for what depends on it to enter an NPU; arrivals bound 38.4 ns + 500 ns latency is less)" -- "$T" synth --topo torus2d:4x4 --coll all-reduce --size 4KiB -k 1 --step-costs off -o "$tmp/lb"

# The bound names what limits it in the topology's own names: the degraded NIC's GPU.
check "bound limit" 0 "bound limit     the links into server0/npu0 from the rest: 350 GB/s = 300 GB/s from server0/nvswitch + 50 GB/s from leaf0" -- "$T" synth --topo "$SRC/examples/topologies/cluster16.yaml" --coll all-gather --size 64MiB -k 2 --no-cache -o "$tmp/limit"
check "arrivals bound limit" 0 "bound limit     8 nodes hold the ranks: every byte enters them 2 x (8 - 1) times, through 400 GB/s in all into the NPUs and reducing switches" -- "$T" synth --topo switch:8 --coll all-reduce --size 64MiB -k 2 --no-cache -o "$tmp/limit2"
# An All-Reduce also says what the usual two-phase shape needs where that is above the bound: the
# degraded NIC's GPU takes in (and sends out) its share of both halves through 350 GB/s.
check "halves in turn" 0 "halves' limit   Reduce-Scatter: the links out of server0/npu0 to the rest: 350 GB/s = 300 GB/s to server0/nvswitch + 50 GB/s to leaf0; All-Gather: the links into server0/npu0 from the rest: 350 GB/s" -- "$T" synth --topo "$SRC/examples/topologies/cluster16.yaml" --coll all-reduce --size 64MiB -k 2 --no-cache -o "$tmp/halves"
check "halves in turn figure" 0 "halves in turn  360.9 us  (a Reduce-Scatter, then an All-Gather once it has ended, take 180.6 us + 180.3 us at least" -- "$T" synth --topo "$SRC/examples/topologies/cluster16.yaml" --coll all-reduce --size 64MiB -k 2 --no-cache -o "$tmp/halves"
check "verify halves in turn" 0 "halves in turn 360.9 us" -- "$T" verify "$tmp/halves/algorithm.json" --topo "$SRC/examples/topologies/cluster16.yaml"
# A baseline the portfolio does not race for its size is named, with the flag that builds it.
check "left out" 0 "left out        baseline blink: not raced over more than 256 ranks" -- "$T" synth --topo switch:300 --coll all-reduce --size 1MiB --no-cache -o "$tmp/leftout"
check "left out json" 0 '"why": "ranks"' -- "$T" synth --topo switch:300 --coll all-reduce --size 1MiB --no-cache -o "$tmp/leftout" --json
# On a switch the halves in turn are the bound itself: no such line.
if "$T" synth --topo switch:8 --coll all-reduce --size 64MiB -k 2 --no-cache -o "$tmp/halves2" 2>&1 | grep -q "halves in turn"; then
  echo "FAIL switch:8 prints halves in turn, though they equal its bound"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check "arrivals bound names the slow NPU" 0 "through 6.35 TB/s in all into their NPUs and reducing switches (350 GB/s into server0/npu0; 400 GB/s into each of the other 15)" -- "$T" synth --topo "$SRC/examples/topologies/cluster16.yaml" --coll all-reduce --size 64MiB -k 2 --no-cache -o "$tmp/halves"
check "topo info cut" 0 "(the links into a0, a1, a2, a3 from the rest: 25 GB/s = 25 GB/s b0 -> a0)" -- "$T" topo info "$SRC/examples/topologies/two-islands.yaml"

# An All-Reduce's printed bound is one: a reduction tree on a line (reduce to the middle and back)
# once beat the Reduce-Scatter + All-Gather figure printed as the bound by 43 % (ratio 0.5727).
ratio=$("$T" synth --topo line:8 --coll all-reduce --size 256MiB 2>&1 | sed -n 's/^ratio *\([0-9.]*\).*/\1/p' | head -1)
if awk -v r="$ratio" 'BEGIN { exit !(r >= 1.0) }'; then pass=$((pass + 1)); else
  echo "FAIL line:8 all-reduce beats its lower bound: ratio '$ratio'"; fail=$((fail + 1)); fi

# baselines: --algo picks the producer; --algo all compares every applicable one.
check "algo ring" 0 "algorithm       ring" -- "$T" synth --topo ring:8 --coll all-reduce --algo ring -o "$tmp/b1"
check "algo ring verifies" 0 "CORRECT" -- "$T" verify "$tmp/b1/algorithm.json" --topo ring:8
check "algo hierarchical" 0 "hierarchical:ring,direct" -- "$T" synth --topo "ring:4 x switch:2" --algo hierarchical:ring,direct -o "$tmp/b2"
check "algo all table" 0 "| bidir-ring" -- "$T" synth --topo switch:6 --coll all-reduce --algo all -o "$tmp/b3"
check "algo all not applicable" 0 "hierarchical: does not apply" -- "$T" synth --topo switch:6 --coll all-reduce --algo all -o "$tmp/b3"
check "algo all files" 0 "" -- test -s "$tmp/b3/ring.json" -a -s "$tmp/b3/tenet.json"
check "algo all sizes one family" 0 "" -- bash -c "! '$T' synth --topo switch:6 --coll all-gather --size 1MB --algo all -k 1 -o '$tmp/b3b' | grep -E '[0-9] (KB|MB|GB)( |\$)'"
check "algo not applicable" 2 "power-of-two rank count, not 6" -- "$T" synth --topo switch:6 --coll all-gather --algo rhd -o "$tmp/b4"
# oneshot: every rank reduces every other's input; its files keep which transfers send inputs.
check "algo oneshot" 0 "algorithm       oneshot" -- "$T" synth --topo switch:8 --coll all-reduce --size 64KiB --algo oneshot -o "$tmp/b7" --emit chakra,msccl-xml
check "algo oneshot json" 0 '"from": "input"' -- cat "$tmp/b7/algorithm.json"
check "algo oneshot verifies" 0 "CORRECT" -- "$T" verify "$tmp/b7/algorithm.json" --topo switch:8
check "algo oneshot msccl verifies" 0 "CORRECT" -- "$T" verify "$tmp/b7/algorithm.xml" --topo switch:8
check "algo oneshot chakra verifies" 0 "CORRECT" -- "$T" verify "$tmp/b7/chakra/algorithm" --topo switch:8
check "algo oneshot needs pairs" 2 "would have to be relayed" -- "$T" synth --topo ring:6 --coll all-reduce --algo oneshot -o "$tmp/b8"
check "algo unknown" 2 "unknown algorithm 'butterfly'" -- "$T" synth --topo ring:4 --algo butterfly -o "$tmp/b5"
check "algo unsupported" 2 "bruck has no all-reduce" -- "$T" synth --topo ring:4 --algo bruck -o "$tmp/b6"

# export and Chakra tools: both formats come back verified with the same time.
TOPO="ring:4 x switch:2"
check "synth emit" 0 "algorithm.xml" -- "$T" synth --topo "$TOPO" --coll all-reduce --size 8MiB -k 2 --emit chakra,msccl-xml -o "$tmp/e"
check "emit reduce rounding" 0 "duration_micros holds whole microseconds, so each COMP node says 2 us" -- "$T" synth --topo "$TOPO" --coll all-reduce --size 8MiB -k 2 --emit chakra --reduce-bw 500GB/s -o "$tmp/e2"
# The ASTRA-sim bundle's collective holds its reductions in whole microseconds too: said without
# --emit chakra as well.
check "emit astra-sim reduce rounding" 0 "astra-sim: a reduction of 128 KiB at 300 GB/s takes 0.4369 us; duration_micros holds whole microseconds, so each COMP node says 1 us" -- "$T" synth --topo switch:8 --coll all-reduce --size 1MiB -k 1 --emit astra-sim --reduce-bw 300GB/s -o "$tmp/e2a"
check "reduce-bw claim" 0 "each reduction 1.049 us at 500 GB/s" -- "$T" synth --topo "$TOPO" --coll all-reduce --size 8MiB -k 2 --reduce-bw 500GB/s -o "$tmp/rb"
check "reduce-bw json" 0 '"reduce_Bps": 500000000000' -- cat "$tmp/rb/algorithm.json"
check "reduce-bw verify" 0 "CORRECT" -- "$T" verify "$tmp/rb/algorithm.json" --topo "$TOPO"
check "reduce-bw re-timed" 0 "re-timed with reductions at no cost" -- "$T" export "$tmp/rb/algorithm.json" --topo "$TOPO" -f json,msccl-xml --reduce-bw 0 -o "$tmp/rb0"
check "reduce-bw msccl" 0 "msccl-xml: the reduction time (1.049 us at 500 GB/s) is not in the file" -- "$T" export "$tmp/rb/algorithm.json" --topo "$TOPO" -f msccl-xml -o "$tmp/rbx"
check "reduce-bw bad" 2 "--reduce-bw: " -- "$T" synth --topo "$TOPO" --coll all-reduce --size 8MiB --reduce-bw fast -o "$tmp/rbb"
check "emit network.yml" 0 "" -- test -s "$tmp/e/chakra/network.yml" -a -s "$tmp/e/chakra/system.json" -a -s "$tmp/e/chakra/algorithm.7.et"
# What ASTRA-sim will report (its analytical network run as chakra/astra_analytical.hpp emulates it).
check "emit astra time" 0 "on ASTRA-sim's analytical network (congestion-unaware; Tenet: 1.341 ms, ratio 1.0000)" -- "$T" synth --topo torus2d:8x8 --coll all-gather --size 256MiB -k 4 --emit chakra -o "$tmp/e5"
check "emit astra json" 0 '"astra_sim_ps"' -- "$T" synth --topo switch:8 --coll all-reduce --size 1MiB --emit chakra --json -o "$tmp/e6"
check "export queue" 0 "chakra: " -- "$T" export "$tmp/e6/algorithm.json" --topo switch:8 --format chakra --chakra-waits queue -o "$tmp/e7"
check "export bad waits" 2 "--chakra-waits: unknown link-wait encoding 'chain' (bytes, queue)" -- "$T" export "$tmp/e6/algorithm.json" --topo switch:8 --chakra-waits chain -o "$tmp/e8"
check "export bad waits wrote nothing" 1 "" -- test -e "$tmp/e8"
# Process groups.
check "synth ranks" 0 "group           4 NPUs: 0-24:8; no other NPU relays or routes its data" -- "$T" synth --topo nvcluster:4x8,net=rail --ranks 0-31:8 --coll all-reduce --size 64MiB -k 1 -o "$tmp/grp"
check "synth ranks in part" 0 "in its part     bound 4.176 ms, ratio 1.0001" -- "$T" synth --topo nvcluster:8x8,net=rail --ranks 8-15 --coll all-reduce --size 1GiB -k 4 --step-costs off -o "$tmp/grp4"
# A server's group borrows the next server through its NICs (its bound counts them), unless told not to.
check "synth ranks mirrors" 0 "group           8 NPUs: 8-15; other NPUs relay 360 transfers and route 0" -- "$T" synth --topo nvcluster:8x8,net=rail --ranks 8-15 --coll all-gather --size 256MiB --step-costs off -o "$tmp/grp5"
check "synth ranks no borrow" 0 "in its part     bound 522.2 us, ratio 1.0005" -- "$T" synth --topo nvcluster:8x8,net=rail --ranks 8-15 --coll all-gather --size 256MiB --no-borrow --step-costs off -o "$tmp/grp6"
check "synth ranks json" 0 '"ranks": [' -- "$T" synth --topo ring:8 --ranks 2,3,4 --coll all-gather --size 1MiB -k 1 --json -o "$tmp/grp2"
check "synth ranks verify" 0 "CORRECT" -- "$T" verify "$tmp/grp2/algorithm.json" --topo ring:8
check "synth ranks bad" 2 "--ranks: '0-9' names NPU 9, and the topology has NPUs 0..7" -- "$T" synth --topo ring:8 --ranks 0-9 -o "$tmp/grp3"
check "synth ranks bad wrote nothing" 1 "" -- test -e "$tmp/grp3"
# All-to-Allv: generated (Zipf, hot experts) and from a file; bad files name their line.
check "synth a2av zipf" 0 "all-to-allv, " -- "$T" synth --topo switch:8 --coll all-to-all --size 8MiB --skew zipf:1.2 -k 1 -o "$tmp/a2av"
check "synth a2av verify" 0 "CORRECT" -- "$T" verify "$tmp/a2av/algorithm.json" --topo switch:8
check "synth a2av hot json" 0 '"collective": "all-to-allv"' -- "$T" synth --topo ring:4 --coll all-to-all --size 1MiB --hot-experts 1 -k 1 --json -o "$tmp/a2av2"
printf '0,1MiB,0,0\n0,0,2MiB,0\n0,0,0,4096\n512KiB,0,0,0\n' > "$tmp/traffic.csv"
check "synth a2av file" 0 "the busiest rank sends 2 MiB" -- "$T" synth --topo ring:4 --coll all-to-all --traffic "$tmp/traffic.csv" -k 1 -o "$tmp/a2av3"
printf '0,1,0,0\n0,0,2,0\n0,0,0\n1,0,0,0\n' > "$tmp/bad-traffic.csv"
check "synth a2av bad file" 2 "bad-traffic.csv:3: 3 entries, expected 4" -- "$T" synth --topo ring:4 --coll all-to-all --traffic "$tmp/bad-traffic.csv" -o "$tmp/a2av4"
check "synth a2av bad wrote nothing" 1 "" -- test -e "$tmp/a2av4"
check "synth a2av file and size" 2 "--traffic gives every pair's bytes: drop -s/--size" -- "$T" synth --topo ring:4 --coll all-to-all --traffic "$tmp/traffic.csv" -s 1MiB -o "$tmp/a2av4"
check "synth a2av wrong coll" 2 "are for -c all-to-all" -- "$T" synth --topo ring:4 --coll all-gather --skew zipf:1 -o "$tmp/a2av4"
check "synth a2av bad skew" 2 "--skew 'hot:2': expected zipf:S" -- "$T" synth --topo ring:4 --coll all-to-all --skew hot:2 -o "$tmp/a2av4"
check "synth a2av two sources" 2 "pick one" -- "$T" synth --topo ring:4 --coll all-to-all --skew zipf:1 --hot-experts 1 -o "$tmp/a2av4"
check "synth a2av msccl refused" 0 "MSCCL-XML cannot express an all-to-allv" -- "$T" synth --topo ring:4 --coll all-to-all --traffic "$tmp/traffic.csv" -k 1 --emit msccl-xml -o "$tmp/a2av5"
# A folder ASTRA-sim runs as it is (sim/astra_bundle.hpp).
check "export astra-sim" 0 "astra-sim: run it: '$tmp/e9/astra-sim/run.sh' (ASTRA_SIM names the binary); the collective there:" -- "$T" export "$tmp/e6/algorithm.json" --topo switch:8 --format astra-sim -o "$tmp/e9"
check "export astra-sim run.sh" 0 "" -- test -x "$tmp/e9/astra-sim/run.sh" -a -s "$tmp/e9/astra-sim/workload/all_reduce.7.et" -a -s "$tmp/e9/astra-sim/collective/algorithm.7.et" -a -s "$tmp/e9/astra-sim/network.yml"
check "export astra-sim fake binary" 0 "--workload-configuration=workload/all_reduce --system-configuration=system.json" -- env ASTRA_SIM=echo "$tmp/e9/astra-sim/run.sh"
check "export astra-sim broadcast" 0 "not written     astra-sim: ASTRA-sim runs custom all-reduce, all-gather, reduce-scatter and all-to-all only, not broadcast" -- "$T" synth --topo ring:4 --coll broadcast -k 1 --emit astra-sim -o "$tmp/e10"
check "export astra-sim workload missing" 2 "--astra-workload: no Chakra ET files $tmp/none.0.et" -- "$T" export "$tmp/e6/algorithm.json" --topo switch:8 --format astra-sim --astra-workload "$tmp/none" -o "$tmp/e11"
check "export astra-sim ns-3" 0 "run it: '$tmp/e12/astra-sim/run.sh' (ASTRA_SIM_NS3 names the binary), on ASTRA-sim's ns-3 network" -- "$T" synth --topo leafspine:2x4,spines=2 --coll all-gather --size 1MiB -k 1 --emit astra-sim -o "$tmp/e12"
check "export astra-sim ns-3 files" 0 "" -- test -s "$tmp/e12/astra-sim/ns3/topology.txt" -a -s "$tmp/e12/astra-sim/ns3/config.txt" -a -s "$tmp/e12/astra-sim/logical_topology.json" -a ! -e "$tmp/e12/astra-sim/network.yml"
check "export astra-sim ns-3 fake binary" 0 "--network-configuration=ns3/config.txt --remote-memory-configuration=remote_memory.json --logical-topology-configuration=logical_topology.json" -- env ASTRA_SIM_NS3=echo "$tmp/e12/astra-sim/run.sh"
check "export astra-sim analytical asked" 0 "is not ASTRA-sim dimensions" -- "$T" synth --topo leafspine:2x4,spines=2 --coll all-gather --size 1MiB -k 1 --emit astra-sim --astra-network analytical -o "$tmp/e13"
check "export astra-sim bad network" 2 "--astra-network: unknown ASTRA-sim network 'ns-3' (auto, analytical, ns3)" -- "$T" export "$tmp/e6/algorithm.json" --topo switch:8 --format astra-sim --astra-network ns-3 -o "$tmp/e14"
time_of() { "$T" verify "$1" --topo "$TOPO" --json | grep '"collective_time_ps"'; }
if [[ "$(time_of "$tmp/e/algorithm.json")" == "$(time_of "$tmp/e/chakra/algorithm")" && \
      "$(time_of "$tmp/e/algorithm.json")" == "$(time_of "$tmp/e/algorithm.xml")" ]]; then pass=$((pass + 1)); else
  echo "FAIL imported algorithms differ in time"; fail=$((fail + 1)); fi
check "verify chakra" 0 "CORRECT" -- "$T" verify "$tmp/e/chakra/algorithm" --topo "$TOPO"
check "verify one et file" 0 "CORRECT" -- "$T" verify "$tmp/e/chakra/algorithm.3.et" --topo "$TOPO"
check "verify xml" 0 "CORRECT" -- "$T" verify "$tmp/e/algorithm.xml" --topo "$TOPO"
check "chakra check" 0 "8 ranks" -- "$T" chakra check "$tmp/e/chakra/algorithm"
check "chakra dump" 0 '"COMM_SEND_NODE"' -- "$T" chakra dump "$tmp/e/chakra/algorithm.0.et"
check "chakra dot" 0 "digraph" -- "$T" chakra dot "$tmp/e/chakra/algorithm.0.et"
check "export" 0 "algorithm.xml" -- "$T" export "$tmp/e/algorithm.json" --topo "$TOPO" --format msccl-xml -o "$tmp/x1"
# MSCCL-XML: no declaration (both runtimes' tokenizers reject it), per-runtime names, buffers verified.
"$T" synth --topo ring:8 --coll all-gather --algo ring -k 1 --emit msccl-xml -o "$tmp/mx" > /dev/null
check "xml no declaration" 0 "<!-- tenet" -- head -c 10 "$tmp/mx/algorithm.xml"
check "xml legacy name" 0 'coll="reduce_scatter"' -- bash -c "'$T' synth --topo switch:4 --coll reduce-scatter --emit msccl-xml --msccl-runtime legacy -o '$tmp/mx2' > /dev/null && cat '$tmp/mx2/algorithm.xml'"
check "xml bad runtime" 2 "unknown MSCCL runtime 'nccl'" -- "$T" synth --topo switch:4 --emit msccl-xml --msccl-runtime nccl -o "$tmp/x"
check "xml size range" 0 'maxBytes="67108864"' -- bash -c "'$T' synth --topo ring:4 --coll all-gather --emit msccl-xml --msccl-max-bytes 64MiB -o '$tmp/mx3' > /dev/null && cat '$tmp/mx3/algorithm.xml'"
check "xml empty size range" 2 "must exceed --msccl-min-bytes" -- "$T" synth --topo ring:4 --emit msccl-xml --msccl-max-bytes 0B -o "$tmp/x"
check "xml bad proto" 2 "unknown MSCCL protocol 'fast'" -- "$T" export "$tmp/mx/algorithm.json" --topo ring:8 --format msccl-xml --msccl-proto fast -o "$tmp/x"
# One receive's dstoff changed: the chunk still reaches the GPU, but the output buffer is wrong.
awk '/type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1"/ && !done {sub(/dstoff="1"/, "dstoff=\"0\""); done=1} {print}' "$tmp/mx/algorithm.xml" > "$tmp/mx/wrong.xml"
check "xml wrong dstoff" 3 "[buffer-slot-wrong] gpu 0: o[0] ends holding chunk 1" -- "$T" verify "$tmp/mx/wrong.xml" --topo ring:8
awk '/type="s" srcbuf="i" srcoff="0"/ && !done {sub(/srcbuf="i" srcoff="0"/, "srcbuf=\"o\" srcoff=\"5\""); done=1} {print}' "$tmp/mx/algorithm.xml" > "$tmp/mx/unwritten.xml"
check "xml reads unwritten" 3 "which holds no data at that point" -- "$T" verify "$tmp/mx/unwritten.xml" --topo ring:8
# What msccl-tools writes (no minBytes, maxBytes, outofplace; in-place All-Gather): imported with a warning.
{ printf '<algo name="ag" proto="LL" nchannels="1" nchunksperloop="3" ngpus="3" coll="allgather" inplace="1">\n'
  for r in 0 1 2; do
    printf '<gpu id="%d" i_chunks="1" o_chunks="3" s_chunks="0"><tb id="0" send="%d" recv="%d" chan="0">\n' $r $(((r + 1) % 3)) $(((r + 2) % 3))
    printf '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="%d" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n' $r
    printf '<step s="1" type="rcs" srcbuf="o" srcoff="%d" dstbuf="o" dstoff="%d" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n' $(((r + 2) % 3)) $(((r + 2) % 3))
    printf '<step s="2" type="r" srcbuf="o" srcoff="%d" dstbuf="o" dstoff="%d" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n' $(((r + 1) % 3)) $(((r + 1) % 3))
    printf '</tb></gpu>\n'
  done
  printf '</algo>\n'; } > "$tmp/mx/msccl-tools.xml"
check "xml msccl-tools" 0 "CORRECT" -- "$T" verify "$tmp/mx/msccl-tools.xml" --topo "ring:3,bidir=false"
check "xml msccl-tools warns" 0 "lacks minBytes: the executor runtime" -- "$T" verify "$tmp/mx/msccl-tools.xml" --topo "ring:3,bidir=false"
# Parallel links (DGX-1's doubled NVLinks) survive the round trip: the same time.
"$T" synth --topo dgx1 --coll all-reduce --size 64MiB -k 4 --emit msccl-xml -o "$tmp/dgx" > /dev/null
if [[ "$("$T" verify "$tmp/dgx/algorithm.json" --topo dgx1 --json | jq .collective_time_ps)" == \
      "$("$T" verify "$tmp/dgx/algorithm.xml" --topo dgx1 --json | jq .collective_time_ps)" ]]; then pass=$((pass + 1)); else
  echo "FAIL dgx1 MSCCL-XML round trip changed the time"; fail=$((fail + 1)); fi
check "export bad format" 2 "unknown format 'pdf'" -- "$T" export "$tmp/e/algorithm.json" --topo "$TOPO" --format pdf -o "$tmp/x2"
# A format that cannot hold the algorithm is skipped with the reason; everything else is written.
check "export unsupported" 0 "not written     msccl-xml: MSCCL-XML export supports all-reduce" -- "$T" synth --topo ring:4 --coll broadcast --emit chakra,msccl-xml -o "$tmp/x3"
check "export unsupported wrote json" 0 "CORRECT" -- "$T" verify "$tmp/x3/algorithm.json" --topo ring:4
check "export unsupported wrote chakra" 0 "CORRECT" -- "$T" verify "$tmp/x3/chakra/algorithm" --topo ring:4
if [[ -e $tmp/x3/algorithm.xml ]]; then echo "FAIL a refused format left a file"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check "export only unsupported" 2 "not written: msccl-xml" -- "$T" export "$tmp/x3/algorithm.json" --topo ring:4 --format msccl-xml -o "$tmp/x4"
head -c 40 "$tmp/e/chakra/algorithm.0.et" > "$tmp/cut.0.et"
check "chakra truncated" 2 "truncated" -- "$T" chakra dump "$tmp/cut.0.et"
check "chakra check missing" 2 "no Chakra ET files" -- "$T" chakra check "$tmp/none"

# simulator
check "sim help" 0 "--workload" -- "$T" sim --help
check "sim preset" 0 "iteration time" -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --trace "$tmp/trace.json"
check "sim trace" 0 "traceEvents" -- cat "$tmp/trace.json"
check "sim ring" 0 "collectives     5 run" -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --coll all-reduce=ring
# Where the time went: a row per collective, size and group kind with the algorithm that ran it.
check "sim collective rows" 0 "| dp    | all-reduce | 57.07 MiB |     1 | ring (k=4) |   562 us | 0 ps |    0 ps | link 16 (npu0 -> rail0) (93 %) |" -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --coll all-reduce=ring
check "sim collective totals" 0 "per group       dp 5 calls, 1.086 ms running, 46.1 us exposed" -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --coll all-reduce=ring
check "sim collective rows json" 0 '"group": "dp",' -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --coll all-reduce=ring --json
check "sim collective rows one" 0 "... 4 more rows (--json lists every one)" -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --coll all-reduce=ring --collectives 1
check "sim congestion" 0 "analytical-congestion network" -- "$T" sim --workload resnet50 --topo switch:8 --network analytical-congestion
check "sim json" 0 '"iteration_ps"' -- "$T" sim --workload resnet50 --topo switch:4 --json
# The cache's counts and whether a search stopped early, as the text output says them.
check "sim json made" 0 '"stopped_early": false' -- "$T" sim --workload resnet50 --topo ring:4 --cache "$tmp/simcache" --json
check "sim json cache hit" 0 '"misses": 0' -- "$T" sim --workload resnet50 --topo ring:4 --cache "$tmp/simcache" --json
check "sim json no cache" 0 '"cache": null' -- "$T" sim --workload resnet50 --topo ring:4 --no-cache --json
check "workload gen" 0 "wrote 4 ranks" -- "$T" workload gen --model resnet50 --dp 4 -o "$tmp/wl/resnet"
# One collective per rank (ASTRA-sim's microbenchmark form): tenet sim runs it in the collective's own time.
check "workload gen coll" 0 "one all-reduce of 64 MiB each" -- "$T" workload gen --coll all-reduce --size 64MiB --npus 8 -o "$tmp/mb/ar"
if [[ "$("$T" sim -w "$tmp/mb/ar" -t ring:8 --coll all-reduce=ring -k 1 | grep 'iteration time' | awk '{print $3, $4}')" == \
      "$("$T" synth -t ring:8 -c all-reduce -s 64MiB -a ring -k 1 -o "$tmp/mbs" | grep 'collective time' | awk '{print $3, $4}')" ]]; then
  pass=$((pass + 1)); else echo "FAIL microbenchmark time differs from the collective's"; fail=$((fail + 1)); fi
check "workload gen coll type" 0 '"int64_val": "0"' -- "$T" chakra dump "$tmp/mb/ar.0.et"
# A run that cannot fit in memory is refused up front with the estimate (TENET_MEMORY stands in for
# a small machine). A ring replays from its plan, a byte per transfer: it fits where its list does not.
check "sim memory estimate" 2 "all-reduce of 64 MiB over 8 ranks (8 chunks per NPU: about 896 transfers) would need about 105 KiB of memory, and 4 KiB are available (TENET_MEMORY); simulate fewer ranks" -- env TENET_MEMORY=4KiB "$T" sim -w "$tmp/mb/ar" -t ring:8 --coll all-reduce=direct -k 8
check "sim ring plan fits" 0 "ring plans      1" -- env TENET_MEMORY=4KiB "$T" sim -w "$tmp/mb/ar" -t ring:8 --coll all-reduce=ring -k 8
check "sim ring plan estimate" 2 "ring plan of all-reduce of 64 MiB over 8 ranks (8 chunks per NPU: 896 transfers) would need about 896 B" -- env TENET_MEMORY=512B "$T" sim -w "$tmp/mb/ar" -t ring:8 --coll all-reduce=ring -k 8
check "synth memory estimate" 2 "would need about" -- env TENET_MEMORY=1KiB "$T" synth -t ring:8 -c all-gather -s 64MiB -k 4 -o "$tmp/mem"
check "synth composed" 0 "composed: Reduce-Scatter in each server" -- "$T" synth -t nvcluster:2x4,net=rail -c all-reduce -s 1MiB --method composed -k 2 -o "$tmp/composed"
check "synth composed chunks" 0 "8 chunks of 128 KiB" -- "$T" synth -t nvcluster:2x4,net=rail -c all-reduce -s 1MiB --method composed -k 2 -o "$tmp/composed"
check "synth composed flat" 2 "method composed makes an all-reduce over every NPU of two or more servers" -- "$T" synth -t torus2d:4x4 -c all-reduce --method composed -o "$tmp/composed2"
check "synth composed group" 2 "two or more servers" -- "$T" synth -t nvcluster:2x4,net=rail -c all-reduce --ranks 0-3 --method composed -o "$tmp/composed3"
check "synth symmetric" 0 "method: symmetric (rank 0's schedule on Z4 x Z4, moved to every NPU)" -- "$T" synth -t torus2d:4x4 -c all-reduce -k 4 --method symmetric -o "$tmp/symmetric"
check "synth symmetric verified" 0 "verified        correct" -- "$T" synth -t hypercube:16 -c reduce-scatter -k 2 --method symmetric -o "$tmp/symmetric"
check "synth symmetric auto" 0 "method: symmetric" -- "$T" synth -t torus2d:8x8 -c all-gather -s 256MiB --step-costs off -o "$tmp/symmetric"
check "synth symmetric mesh" 2 "method symmetric: the topology does not look the same from every NPU" -- "$T" synth -t mesh2d:4x4 -c all-gather --method symmetric -o "$tmp/symmetric2"
check "synth symmetric group" 2 "translation needs every NPU in the collective" -- "$T" synth -t torus2d:4x4 -c all-gather --ranks 0-3 --method symmetric -o "$tmp/symmetric3"
check "synth symmetric broadcast" 2 "translation covers All-Gather, Reduce-Scatter, All-Reduce and All-to-All" -- "$T" synth -t torus2d:4x4 -c broadcast --method symmetric -o "$tmp/symmetric4"
check "synth symmetric all-to-all" 0 "verified        correct" -- "$T" synth -t torus2d:4x4 -c all-to-all -k 2 --method symmetric -o "$tmp/symmetric5"
check "info sampled diameter" 0 "(searched from 65 of 4160 NPUs)" -- "$T" topo info nvcluster:520x8,net=rail
[[ -e "$tmp/mem" ]] && { echo "FAIL synth memory estimate: wrote $tmp/mem"; fail=$((fail + 1)); } || pass=$((pass + 1))
check "memory override bad" 2 "TENET_MEMORY='lots'" -- env TENET_MEMORY=lots "$T" synth -t ring:8 -c all-gather -s 64MiB -k 4 -o "$tmp/mem"
check "memory fits" 0 "collective time" -- env TENET_MEMORY=1GiB "$T" synth -t ring:8 -c all-gather -s 64MiB -k 4 -o "$tmp/mem2"
# One algorithm file per size for a collective (the 64 MiB call runs the 64 MiB file); only files
# may repeat.
"$T" synth --topo ring:8 --coll all-reduce --size 1MiB -k 1 -o "$tmp/ps1" > /dev/null
"$T" synth --topo ring:8 --coll all-reduce --size 64MiB -k 1 -o "$tmp/ps64" > /dev/null
check "sim coll per size" 0 "iteration time" -- "$T" sim -w "$tmp/mb/ar" -t ring:8 --coll "all-reduce=$tmp/ps64/algorithm.json,all-reduce=$tmp/ps1/algorithm.json"
if "$T" sim -w "$tmp/mb/ar" -t ring:8 --coll "all-reduce=$tmp/ps64/algorithm.json,all-reduce=$tmp/ps1/algorithm.json" | grep -q "as it is"; then
  echo "FAIL sim coll per size: the 1 MiB call did not run the 1 MiB file"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check "sim coll twice" 2 "--coll names all-reduce twice ('ring' and 'tenet'): a collective may repeat only with algorithm files, one per size" -- "$T" sim -w "$tmp/mb/ar" -t ring:8 --coll all-reduce=ring,all-reduce=tenet
check "workload gen coll and model" 2 "--dp shapes a model preset" -- "$T" workload gen --coll all-reduce --npus 8 --dp 2 -o "$tmp/mb/x"
check "workload gen coll needs npus" 2 "--coll needs --npus" -- "$T" workload gen --coll all-gather -o "$tmp/mb/x"
# All-Gather sizes in NCCL's convention (the output); Chakra's comm_size is each rank's input.
check "workload gen all-gather" 0 "one all-gather of 8 MiB each (a COMM_COLL node, as ASTRA-sim's microbenchmarks); comm_size 1 MiB, each rank's input" -- "$T" workload gen --coll all-gather --size 8MiB --npus 8 -o "$tmp/mb/ag"
check "workload gen all-gather comm_size" 0 '"int64_val": "1048576"' -- "$T" chakra dump "$tmp/mb/ag.0.et"
check "workload gen all-gather uneven" 2 "all-gather of 1000 B over 3 ranks: Chakra's comm_size is each rank's input (1000 B/3), so the size must be a multiple of 3" -- "$T" workload gen --coll all-gather --size 1000B --npus 3 -o "$tmp/mb/x"
check "workload gen coll root" 2 "root 9 is not one of the 4 ranks" -- "$T" workload gen --coll broadcast --npus 4 --root 9 -o "$tmp/mb/x"
check "workload gen batch" 0 "batch 8 per replica x 2 replicas = 16 sequences per iteration of 4096 tokens (65536 tokens), micro-batch 2" -- "$T" workload gen --model gpt3-175b --dp 2 --tp 2 --pp 2 --microbatches 4 --batch 8 --seq-len 4096 -o "$tmp/wl/g"
check "workload gen default batch" 0 "batch 64 per replica x 4 replicas = 256 images per iteration" -- "$T" workload gen --model resnet50 --dp 4 -o "$tmp/wl/r2"
check "workload seq on cnn" 2 "resnet50 has no sequence length" -- "$T" workload gen --model resnet50 --seq-len 128 -o "$tmp/wl/r3"
check "sim batch" 0 "batch 128 per replica x 4 replicas = 512 images" -- "$T" sim --workload resnet50 --topo switch:4 --batch 128
check "sim default micro-batches" 0 "batch 4 per replica x 1 replica = 4 sequences per iteration of 2048 tokens (8192 tokens), micro-batch 1" -- "$T" sim --workload gpt3-175b --topo nvcluster:1x4 --tp 2 --pp 2 --microbatches 4 --coll all-reduce=ring
check "sim mfu" 0 "compute         MFU " -- "$T" sim --workload resnet50 --topo switch:4 --coll all-reduce=ring
check "sim no mfu without roofline" 0 "compute         no MFU: COMP nodes replay their durations, 1 ns where they have none" -- "$T" sim --workload resnet50 --topo switch:4 --coll all-reduce=ring --system <(printf '{"preferred-dataset-splits": 1, "local-mem-bw": 1600}')
check "sim efficiency" 0 "TFLOP/s each); COMP nodes run at 50 % of the peak (--compute-efficiency)" -- "$T" sim --workload resnet50 --topo switch:4 --coll all-reduce=ring --peak-perf 100 --compute-efficiency 0.5
check "sim efficiency json" 0 '"efficiency": 0.5' -- "$T" sim --workload resnet50 --topo switch:4 --coll all-reduce=ring --compute-efficiency 0.5 --json
check "sim efficiency range" 2 "--compute-efficiency: Value 2 not in range" -- "$T" sim --workload resnet50 --topo switch:4 --compute-efficiency 2
check "sim memory efficiency" 0 "their bytes at 50 % of 2.039 TB/s (--memory-efficiency)" -- "$T" sim --workload resnet50 --topo switch:4 --coll all-reduce=ring --memory-efficiency 0.5
check "sim memory efficiency range" 2 "--memory-efficiency: Value 0 not in range" -- "$T" sim --workload resnet50 --topo switch:4 --memory-efficiency 0
check "sim gpt one replica" 0 "replica 1 of 4 simulated, the others mirroring it, 2 ranks" -- "$T" sim --workload gpt:layers=2,hidden=256,heads=4 --topo nvcluster:2x4 --tp 2 --microbatches 2 --coll all-reduce=ring,all-gather=ring --one-replica
check "sim gpt bad spec" 2 "model 'gpt:layers=2,hidden=256,heads=3': 3 heads do not divide the width 256" -- "$T" sim --workload gpt:layers=2,hidden=256,heads=3 --topo switch:4
check "sim one replica needs analytical" 2 "simulating one data-parallel replica for all needs the analytical network" -- "$T" sim --workload gpt:layers=2,hidden=256,heads=4 --topo switch:4 --coll all-reduce=ring --one-replica --network analytical-congestion
check "sim one replica preset only" 2 "--one-replica applies to a model preset" -- "$T" sim --workload "$tmp/nonexistent" --topo switch:4 --one-replica
check "sim fractional micro-batch" 2 "a batch of 6 sequences per replica does not split into 4 micro-batches of whole sequences: give a batch that is a multiple of 4 (such as 4 or 8), or fewer micro-batches" -- "$T" sim --workload gpt3-175b --topo nvcluster:1x4 --tp 2 --pp 2 --microbatches 4 --batch 6
check "workload gen fractional micro-batch" 2 "resnet50's own batch of 64 images per replica does not split into 3 micro-batches of whole images: give a batch that is a multiple of 3 (such as 63 or 66)" -- "$T" workload gen --model resnet50 --pp 2 --microbatches 3 -o "$tmp/wl/r4"
check "sim batch on et" 2 "carries its own sizes" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:4 --batch 128
check "sim et workload" 0 "4 ranks" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:4
check "sim too few npus" 2 "4 ranks, but the topology has 2 NPUs" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:2
check "sim bad network" 2 "unknown network 'ethernet'" -- "$T" sim --workload resnet50 --topo ring:4 --network ethernet
check "sim bad coll" 2 "unknown algorithm 'fast'" -- "$T" sim --workload resnet50 --topo ring:4 --coll all-reduce=fast
check "sim missing workload" 2 "no Chakra ET files" -- "$T" sim --workload "$tmp/nothing" --topo ring:4
check "sim file producer" 0 "iteration time" -- "$T" sim --workload resnet50 --topo "$TOPO" --coll "all-reduce=$tmp/e/algorithm.xml"
check "sim file one size" 0 "warning         all-reduce of" -- "$T" sim --workload resnet50 --topo "$TOPO" --coll "all-reduce=$tmp/e/algorithm.json"
check "sim xml scaled" 0 "iteration time" -- bash -c "! '$T' sim --workload resnet50 --topo '$TOPO' --coll 'all-reduce=$tmp/e/algorithm.xml' | grep -q 'warning         all-reduce' && echo 'iteration time'"
check "sim hybrid" 0 "dp 2 x tp 2 x pp 2, 4 micro-batches, gpipe" -- "$T" sim --workload gpt3-175b --topo nvcluster:2x4 --tp 2 --pp 2 --microbatches 4 --schedule gpipe
check "sim bad split" 2 "do not split into tensor 3" -- "$T" sim --workload gpt3-175b --topo nvcluster:2x4 --tp 3
check "sim packet" 0 "credit stalls" -- "$T" sim --workload resnet50 --topo nvcluster:2x4 --network packet --trace "$tmp/ptrace.json"
check "sim packet trace links" 0 "network links" -- cat "$tmp/ptrace.json"
check "sim packet table" 0 "deepest queue / buffer" -- "$T" sim --workload resnet50 --topo switch:4 --network packet --cut-through --routing ecmp --arbitration fixed-priority --mtu 1KiB --header 64B --buffer 64KiB
check "sim packet json" 0 '"packet_hops"' -- "$T" sim --workload resnet50 --topo switch:4 --network packet --json
check "sim packet deadlock" 2 "packet network deadlock" -- "$T" sim --workload resnet50 --topo ring:8,router=true --network packet --buffer 4KiB --coll all-reduce=direct
check "sim packet flag needs packet" 2 "--mtu applies to --network packet only" -- "$T" sim --workload resnet50 --topo ring:4 --mtu 1KiB
check "sim packet mtu 0" 2 "--mtu must be at least 1 B" -- "$T" sim --workload resnet50 --topo ring:4 -n packet --mtu 0B
check "sim packet header unit" 2 "--header: size '12' has no unit" -- "$T" sim --workload resnet50 --topo ring:4 -n packet --header 12
check "sim packet small buffer" 2 "a buffer of 1024 B cannot hold one packet of 4096 B" -- "$T" sim --workload resnet50 --topo ring:4 -n packet --buffer 1KiB
# Recorded traces (sim/recorded_trace.hpp): flags, summary, the analytical overload warning, ECMP.
check "sim trace summary" 0 "dependencies    data and control" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:4
check "sim overload warning" 0 "warning         analytical network: 16 links were asked for more than their bandwidth" -- "$T" sim --workload resnet50 --topo switch:8
check "sim overload json" 0 '"overloaded_links"' -- "$T" sim --workload resnet50 --topo switch:8 --json
check "sim replicate preset" 2 "--deps, --replicate and --comm-groups apply to a Chakra ET workload" -- "$T" sim --workload resnet50 --topo ring:4 --replicate 2
check "sim replicate many ranks" 2 "--replicate runs a one-rank trace as N ranks, but it has 4 rank files" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:8 --replicate 8
check "sim replicate zero" 2 "--replicate" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:8 --replicate 0
check "sim deps bad" 2 "unknown dependency mode 'ctrl' (auto, all, data)" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:4 --deps ctrl
check "sim comm groups missing" 2 "none.json" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:4 --comm-groups "$tmp/none.json"
echo '{"1": [0, 1' > "$tmp/groups.json"
check "sim comm groups bad" 2 "groups.json: not JSON" -- "$T" sim --workload "$tmp/wl/resnet" --topo ring:4 --comm-groups "$tmp/groups.json"
check "sim routing congestion" 0 "iteration time" -- "$T" sim --workload resnet50 --topo leafspine:2x4,spines=2 --network analytical-congestion --routing ecmp
check "sim packet refused up front" 2 "about 198180864 packets to simulate at a 4 KiB MTU, over the limit of 10000000 (about 28.31 s at 7 million packets a second): raise --mtu to 128 KiB" -- "$T" sim --workload gpt3-175b --topo nvcluster:2x4 --tp 4 --network packet --max-packets 10000000
# ASTRA-sim inputs as they are: a microbenchmark ET set, a network.yml and a system.json.
mkdir -p "$tmp/astra" && "$T" workload gen --coll all-reduce --npus 8 --size 1MiB -o "$tmp/astra/ar" > /dev/null
printf 'topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n' > "$tmp/astra/ring8.yml"
printf '{"scheduling-policy": "LIFO", "endpoint-delay": 10, "preferred-dataset-splits": 4,\n "all-reduce-implementation": ["ring"], "local-mem-bw": 1600}\n' > "$tmp/astra/system.json"
check "sim astra system" 0 "system          $tmp/astra/system.json: all-reduce ring:1" -- "$T" sim --workload "$tmp/astra/ar" --topo "$tmp/astra/ring8.yml" --system "$tmp/astra/system.json"
check "sim astra system notes" 0 "system note     endpoint-delay 10 ns: at each end of every message of a collective" -- "$T" sim --workload "$tmp/astra/ar" --topo "$tmp/astra/ring8.yml" --system "$tmp/astra/system.json"
check "sim astra system json" 0 '"ring:1"' -- "$T" sim --workload "$tmp/astra/ar" --topo "$tmp/astra/ring8.yml" --system "$tmp/astra/system.json" --json
printf '{"all-reduce-implementation-custom": ["%s/astra/nothing"]}\n' "$tmp" > "$tmp/astra/custom.json"
check "sim astra custom missing" 2 "names no Chakra ET set" -- "$T" sim --workload "$tmp/astra/ar" --topo "$tmp/astra/ring8.yml" --system "$tmp/astra/custom.json"
check "sim astra bad impl" 2 "unknown collective implementation 'ringg'" -- bash -c "echo '{\"all-reduce-implementation\": [\"ringg\"]}' > '$tmp/astra/bad.json' && '$T' sim --workload '$tmp/astra/ar' --topo '$tmp/astra/ring8.yml' --system '$tmp/astra/bad.json'"
printf '{"memory-type": "MEMORY_POOL", "remote-mem-latency": 100, "remote-mem-bw": 50}\n' > "$tmp/astra/mem.json"
check "sim remote memory" 0 "remote memory   $tmp/astra/mem.json: 100 ns + bytes / 50 GB/s per access, one memory for all NPUs" -- "$T" sim --workload "$tmp/astra/ar" --topo "$tmp/astra/ring8.yml" --remote-memory "$tmp/astra/mem.json"
printf '{"memory-type": "CXL"}\n' > "$tmp/astra/badmem.json"
check "sim remote memory bad" 2 "badmem.json: memory-type: unknown 'CXL'" -- "$T" sim --workload "$tmp/astra/ar" --topo "$tmp/astra/ring8.yml" --remote-memory "$tmp/astra/badmem.json"
check "sim routing analytical" 2 "--routing applies to --network packet and analytical-congestion only" -- "$T" sim --workload resnet50 --topo ring:4 --routing ecmp
check "sim packet routing" 2 "unknown routing 'bogus' (source, ecmp)" -- "$T" sim --workload resnet50 --topo ring:4 -n packet --routing bogus
check "sim packet arbitration" 2 "unknown arbitration 'lottery'" -- "$T" sim --workload resnet50 --topo ring:4 -n packet --arbitration lottery
check "workload gen hybrid" 0 "wrote 8 ranks" -- "$T" workload gen --model dlrm --dp 2 --tp 2 --pp 2 -o "$tmp/wl/dlrm"
check "workload bad schedule" 2 "unknown pipeline schedule 'zigzag'" -- "$T" workload gen --schedule zigzag -o "$tmp/wl/z"
check "workload bad model" 2 "unknown model 'alexnet'" -- "$T" workload gen --model alexnet -o "$tmp/wl/x"

# tenet bench: a small suite, its outputs, malformed suites, --compare-to regressions.
printf 'name: tiny\ntopologies: [ring:4, switch:4]\ncollectives: [all-reduce, all-gather]\nsizes: [1MiB, 64MiB]\nalgorithms: all\nchunks: [1, 2]\n' > "$tmp/tiny.yaml"
check "bench help" 0 "4 regressions against --compare-to" -- "$T" bench --help
# --help and the README say the same about --quick, and every verb states the chunks default.
check "bench help quick" 0 "16 cases, about 6 s on 2 cores" -- "$T" bench --help
check "readme quick" 0 "16 cases, about 6 s on 2 cores" -- cat "$SRC/README.md"
check "synth help chunks" 0 "auto: try 1, 2, 4" -- "$T" synth --help
check "sim help chunks" 0 "or auto: per collective and size" -- "$T" sim --help
check "sim help chunks default" 0 "=auto" -- bash -c "'$T' sim --help | grep -A1 -- '--chunks-per-npu'"
check "bench tiny" 0 "verified correct" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b1" --network analytical
for f in results.csv report.md plots/plots.gp plots/speedup-all-reduce.dat plots/speedup-all-gather.dat; do
  if [[ -s $tmp/b1/$f ]]; then pass=$((pass + 1)); else echo "FAIL bench wrote no $f"; fail=$((fail + 1)); fi
done
check "bench csv sim column" 0 "sim_analytical_ps" -- head -1 "$tmp/b1/results.csv"
check "bench same as before" 0 "no regressions against" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b2" --compare-to "$tmp/b1/results.csv"
# Pretend ring used to be faster: its first row's time becomes 1 ps.
awk -F, 'BEGIN{OFS=","} $7=="ring" && $8=="ok" && !done {$9=1; done=1} {print}' "$tmp/b1/results.csv" > "$tmp/old.csv"
check "bench regression" 4 "slower collective" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b3" --compare-to "$tmp/old.csv"
# A build that got slower (machine load can do that) warns; it fails only when asked. (Old build
# times of -1 s make every build "slower", past the 50 ms floor.)
awk -F, 'BEGIN{OFS=","} NR > 1 && $8=="ok" {$13=-1} {print}' "$tmp/b1/results.csv" > "$tmp/fastbuild.csv"
check "bench build time warns" 0 "warning: " -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b3b" --compare-to "$tmp/fastbuild.csv" --speed-tolerance 0
check "bench build time fails when asked" 4 "slower to build" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b3c" --compare-to "$tmp/fastbuild.csv" --speed-tolerance 0 --fail-on-build-time
check "bench compare missing" 2 "cannot open file" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b4" --compare-to "$tmp/none.csv"
printf 'a,b\n1,2\n' > "$tmp/notresults.csv"
check "bench compare not results" 2 "no 'topology' column" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b5" --compare-to "$tmp/notresults.csv"
printf 'topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\nchunks: [two]\n' > "$tmp/bad-suite.yaml"
check "bench bad suite" 2 "error: $tmp/bad-suite.yaml:4:" -- "$T" bench "$tmp/bad-suite.yaml" -o "$tmp/b6"
if [[ -e $tmp/b6 ]]; then echo "FAIL bad suite left output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check "bench bad network" 2 "unknown network" -- "$T" bench "$tmp/tiny.yaml" -o "$tmp/b7" --network ethernet
# chunks: auto in a suite, and a suite without chunks runs auto too.
# A suite without the tenet row has no speed-up bars: the plots render without them, and nothing
# claims gnuplot is missing.
printf 'topologies: [ring:4]\ncollectives: [all-gather]\nsizes: [64KiB, 1MiB]\nalgorithms: [ring]\n' > "$tmp/notenet.yaml"
if command -v gnuplot > /dev/null; then
  check "bench without tenet plots" 0 "plots (SVG)" -- "$T" bench "$tmp/notenet.yaml" -o "$tmp/b8" --no-cache
  if [[ -e $tmp/b8/plots/speedup-all-gather.dat ]]; then echo "FAIL speed-up bars without tenet"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
fi
# No gnuplot on the PATH, and a gnuplot that fails: each said as it is.
check "bench no gnuplot" 0 "gnuplot is not installed" -- env PATH="$tmp/nowhere" "$T" bench "$tmp/notenet.yaml" -o "$tmp/b8a" --no-cache
mkdir -p "$tmp/failbin" && printf '#!/bin/sh\nexit 1\n' > "$tmp/failbin/gnuplot" && chmod +x "$tmp/failbin/gnuplot"
check "bench gnuplot fails" 0 "warning: gnuplot failed on plots.gp (exit 1)" -- env PATH="$tmp/failbin:$PATH" "$T" bench "$tmp/notenet.yaml" -o "$tmp/b8b" --no-cache
printf 'topologies: [ring:4]\ncollectives: [all-gather]\nsizes: [1MiB]\nalgorithms: [tenet, ring]\nchunks: [auto, 2]\n' > "$tmp/auto.yaml"
check "bench chunks auto" 0 "4 algorithms verified correct" -- "$T" bench "$tmp/auto.yaml" -o "$tmp/b9"
check "bench auto rows" 0 "ring:4,4,all-gather,1048576,auto," -- cat "$tmp/b9/results.csv"
check "bench auto plots" 0 "" -- test -s "$tmp/b9/plots/ring_4-all-gather-kauto.dat" -a -s "$tmp/b9/plots/ring_4-all-gather-k2.dat"
# A preset's rows name the protocol each algorithm ran: the ring's LL at 1 MiB.
printf 'topologies: [dgx-a100]\ncollectives: [all-reduce]\nsizes: [1MiB]\nalgorithms: [ring]\nchunks: [auto]\n' > "$tmp/proto.yaml"
check "bench protocol run" 0 "" -- "$T" bench "$tmp/proto.yaml" -o "$tmp/b10"
check "bench protocol" 0 "dgx-a100,8,all-reduce,1048576,auto," -- grep ",LL$" "$tmp/b10/results.csv"
# A synth sweep and comparison draws what bench draws, from its own rows.
check "synth plot" 0 "plots        $tmp/sp/plots" -- "$T" synth --topo ring:4 -c all-gather -b 64KiB -e 1MiB -f 4 --algo all --plot -o "$tmp/sp"
check "synth plot data" 0 "" -- test -s "$tmp/sp/plots/ring_4-all-gather-kauto.dat" -a -s "$tmp/sp/plots/speedup-all-gather.dat" -a -s "$tmp/sp/plots/plots.gp"
# Beside --csv, stdout stays CSV: the plots line goes to stderr.
check "synth plot csv" 0 "0" -- bash -c "'$T' synth --topo ring:4 -c all-gather -b 64KiB -e 256KiB --csv --plot -o '$tmp/spc' 2>/dev/null | grep -c '^plots' || true"
check "synth plot one" 2 "--plot draws a size sweep (-b/-e) or a comparison (--algo all)" -- "$T" synth --topo ring:4 -c all-gather -s 1MiB --plot -o "$tmp/sp1"
check "synth plot no gnuplot" 0 "gnuplot is not installed" -- env PATH="$tmp/nowhere" "$T" synth --topo ring:4 -c all-gather -b 64KiB -e 256KiB --plot -o "$tmp/sp2"
"$T" bench --print-default > "$tmp/default.yaml"
check "bench default quick" 0 "default (quick)" -- "$T" bench "$tmp/default.yaml" --quick -o "$tmp/b8"

for f in "$SRC"/examples/topologies/*; do
  check "example $(basename "$f")" 0 "cut bound" -- "$T" topo info "$f"
done

# Issue 23's reproducers, each rebuilt here: a clear error (exit 2), never a crash, a hang or an
# "internal error".
deep() { printf "%0.s$1" $(seq 2000); }
printf 'digraph g { %s %s }\n' "$(deep '{')" "$(deep '}')" > "$tmp/deep.dot"
check "deep dot" 2 "deep.dot:1: nested deeper than Tenet's limit of 256" -- "$T" topo info "$tmp/deep.dot"
printf '{"name": %s%s}\n' "$(deep '[')" "$(deep ']')" > "$tmp/deep.json"
check "deep json" 2 "nested deeper" -- "$T" topo info "$tmp/deep.json"
check "spec of spaces" 0 "cut bound" -- "$T" topo info "ring:$(printf '%0.s ' $(seq 40000))4"
check "hierarchy of spaces" 0 "cut bound" -- "$T" topo info "ring:2$(printf '%0.s ' $(seq 40000))x switch:2"
check "long --coll" 2 "error:" -- "$T" sim -w resnet50 -t ring:4 --coll "all-reduce=$(printf '%0.sr' $(seq 100000))"
long_error=$("$T" sim -w resnet50 -t ring:4 --coll "all-reduce=$(printf '%0.sr' $(seq 100000))" 2>&1)
if [[ ${#long_error} -lt 2000 && $long_error == *"characters ..."* ]]; then pass=$((pass + 1)); else
  echo "FAIL a 100,000-character input is echoed whole (${#long_error} characters)"; fail=$((fail + 1)); fi
check "long algorithm file" 2 "error:" -- "$T" verify "$(printf '%0.sa' $(seq 100000)).7.et" --topo ring:4
check "tp x pp wraps" 2 "do not split into tensor 65536 x pipeline 65536" -- "$T" sim -w resnet50 -t ring:4 --tp 65536 --pp 65536
printf 'name: "\xff\xfe"\nnpus: [a, b]\nlinks: [{src: a, dst: b, bw: 1GB/s, lat: 1us}]\n' > "$tmp/utf8.yaml"
check "invalid utf-8" 2 "name is not valid UTF-8 (byte 0xFF at offset 0)" -- "$T" synth --topo "$tmp/utf8.yaml" --coll all-gather --size 1MiB --json -o "$tmp/u8"
touch "$tmp/a-file"
check "-o is a file" 2 "cannot create the output folder: a file of that name exists" -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB -o "$tmp/a-file"
check "fc:20000" 2 "399980000 links is over Tenet's limit of 4194304" -- "$T" topo info fc:20000
check "packet budget" 2 "over the limit of 100000 (about 87.6 s at 7 million packets a second): raise --mtu to 8 KiB" -- "$T" sim -w resnet50 -t ring:4 --network packet --mtu 1B --max-packets 100000
"$T" synth --topo ring:4 --coll all-gather --size 1MiB -k 1 -o "$tmp/r23" > /dev/null
sed 's/"collective_time_ps": [0-9]*/"collective_time_ps": 1e999/' "$tmp/r23/algorithm.json" > "$tmp/1e999.json"
check "1e999" 2 "a number is out of range" -- "$T" verify "$tmp/1e999.json" --topo ring:4
"$T" export "$tmp/r23/algorithm.json" --topo ring:4 --format msccl-xml -o "$tmp/r23" > /dev/null
sed 's/nchunksperloop="4"/nchunksperloop="2000000000"/' "$tmp/r23/algorithm.xml" > "$tmp/loop.xml"
check "nchunksperloop 2e9" 2 "over Tenet's limit of 1048576" -- "$T" verify "$tmp/loop.xml" --topo ring:4
# Products of user numbers are checked: an error naming the field, exit 2, never a crash, and no
# output folder (issues 57 and 61).
printf 'generator: ring:4\ndimensions: [4, 5, 5581, 8681, 49477, 384773]\n' > "$tmp/dims.yaml"
check "dimensions wrap around" 2 "dims.yaml:2:13: dimensions multiply past 2^63 NPUs" -- "$T" synth --topo "$tmp/dims.yaml" -c all-reduce -s 1MiB --algo hierarchical -o "$tmp/dims"
jq -c '.collective.ranks = [0, 1, 2, 100]' "$ALGO/ring-allgather-4.json" > "$tmp/rank100.json"
jq -c '.transfers[0].dst = 1000000000' "$ALGO/ring-allgather-4.json" > "$tmp/far-dst.json"
for f in msccl-xml chakra json; do
  check "export rank 100 as $f" 2 "rank100.json: collective: the collective is not valid on this topology: rank 3 is node 100" -- "$T" export "$tmp/rank100.json" --topo "ring:4,bidir=false" -f $f -o "$tmp/refused-r100-$f"
  check "export node 1e9 as $f" 2 "far-dst.json: transfers[0].dst: node 1000000000 does not exist" -- "$T" export "$tmp/far-dst.json" --topo "ring:4,bidir=false" -f $f -o "$tmp/refused-far-$f"
done
if compgen -G "$tmp/refused-*" > /dev/null || [[ -e $tmp/dims ]]; then
  echo "FAIL a refused input left output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check "verify rank 100" 3 "[bad-reference] the collective is not valid on this topology" -- "$T" verify "$tmp/rank100.json" --topo "ring:4,bidir=false"
printf '{"roofline-enabled": 1, "peak-perf": 1e-10, "local-mem-bw": 1000}' > "$tmp/slow.json"
check "peak-perf 1e-10" 2 "num_ops 52480000000 at 1e-10 TFLOP/s (peak-perf x compute efficiency) takes 5.248e+08 s, past the 2^63 ps" -- "$T" sim --workload resnet50 --topo ring:4 --system "$tmp/slow.json"
check "chunks under a byte" 2 "-k 1048576: 1048576 chunks per NPU cut all-reduce of 1 MiB into 4194304 chunks of less than a byte: at most 262144 chunks per NPU" -- "$T" synth --topo ring:4 --coll all-reduce --size 1MiB -k 1048576 -o "$tmp/k1m"
printf 'topologies:\n  - {name: %s, npus: [a, b], links: [{src: a, dst: b, bw: 1GB/s, lat: 1us}]}\ncollectives: [all-gather]\nsizes: [1MiB]\n' \
  "$(printf '%0.sn' $(seq 300))" > "$tmp/long-name.yaml"
check "300-character topology name" 0 "wrote" -- "$T" bench "$tmp/long-name.yaml" -o "$tmp/b-long"
# Streams are read up to a limit, not until memory runs out; special files given as outputs are
# written through, never replaced; a killed commit is refused by readers, completed by a writer.
check "chakra dump /dev/zero" 2 "not a Chakra ET node" -- "$T" chakra dump /dev/zero
check "topo info /dev/zero" 2 "still going" -- "$T" topo info /dev/zero
mkfifo "$tmp/trace.fifo"
(cat "$tmp/trace.fifo" > "$tmp/trace.from-fifo") &
check "trace into a FIFO" 0 "" -- "$T" sim --workload resnet50 --topo "nvcluster:2x4" --coll all-reduce=ring --trace "$tmp/trace.fifo"
wait
if [[ ! -p $tmp/trace.fifo || $(head -c 1 "$tmp/trace.from-fifo") != "{" ]]; then
  echo "FAIL trace FIFO replaced or not written through"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
"$T" synth --topo ring:4 --coll all-gather --size 1MiB -o "$tmp/killed" > /dev/null
printf '{"stage": ".tenet-stage.0123456789abcdef", "move": ["algorithm.json"], "remove": []}' \
  > "$tmp/killed/.tenet-commit.0123456789abcdef"
check "reader refuses a killed commit" 2 "killed during its commit" -- "$T" verify "$tmp/killed/algorithm.json" --topo ring:4
[[ -e $tmp/killed/.tenet-commit.0123456789abcdef ]] && pass=$((pass + 1)) ||
  { echo "FAIL a reader changed the folder"; fail=$((fail + 1)); }
check "writer completes a killed commit" 0 "" -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB -o "$tmp/killed"
[[ ! -e $tmp/killed/.tenet-commit.0123456789abcdef ]] && pass=$((pass + 1)) ||
  { echo "FAIL the writer left the killed commit's journal"; fail=$((fail + 1)); }
check "verify after the write" 0 "CORRECT" -- "$T" verify "$tmp/killed/algorithm.json" --topo ring:4
# Flag values out of range are refused naming the flag, not ignored or wrapped (issue 61).
check "restarts 1e6" 2 "--restarts: Value 1000000 not in range 1 to 1024" -- "$T" synth --topo ring:4 --restarts 1000000
check "seed -1" 2 "--seed: must be a whole number from 0 to 2^64-1" -- "$T" synth --topo ring:4 --seed -1
check "seed 2^64" 2 "--seed: must be a whole number" -- "$T" synth --topo ring:4 --seed 18446744073709551616
for ch in 0 -1 100000; do
  check "channels $ch" 2 "--channels: must be auto or a whole number from 1 to 32" -- "$T" synth --topo ring:4 --channels "$ch"
done
check "batch 0" 2 "--batch: Value 0 not in range 1" -- "$T" sim -w resnet50 --topo ring:4 --batch 0
check "seq-len 0" 2 "--seq-len: Value 0 not in range 1" -- "$T" workload gen -m gpt3-13b --seq-len 0 -o "$tmp/wl0"
check "workload gen -o ''" 2 "--output: must name the files' prefix" -- "$T" workload gen -o ""
printf 'topologies: [ring:4, ring:4]\ncollectives: [all-gather]\nsizes: [1MiB]\n' > "$tmp/dup.yaml"
check "bench topology twice" 2 "topology 'ring:4' is listed twice" -- "$T" bench "$tmp/dup.yaml" -o "$tmp/dup"
printf 'name: one\ntopologies: [ring:4, ring:1]\ncollectives: [all-gather]\nsizes: [1MiB]\nalgorithms: [ring]\n' > "$tmp/one.yaml"
check "bench one-NPU topology" 2 "one.yaml:2:22: topology 'ring:1' has 1 NPU: a collective needs at least two" -- "$T" bench "$tmp/one.yaml" -o "$tmp/one"
# Files of the user's that merely look like temporaries stay when the folder is written; only
# Tenet's own leftovers (random names, a stage whose run is gone) go.
mkdir -p "$tmp/tmps/thesis.tmp.31999/chapter" "$tmp/tmps/.tenet-stage.0123456789abcdef/chakra"
touch "$tmp/tmps/notes.txt.tmp.4242" "$tmp/tmps/thesis.tmp.31999/chapter/1.tex" \
  "$tmp/tmps/.tenet-stage.0123456789abcdef/chakra/a.0.et"
check "user files like temporaries" 0 "" -- "$T" synth --topo ring:4 --coll all-gather --size 1MiB -o "$tmp/tmps"
if [[ ! -e $tmp/tmps/notes.txt.tmp.4242 || ! -e $tmp/tmps/thesis.tmp.31999/chapter/1.tex ||
      -e $tmp/tmps/.tenet-stage.0123456789abcdef ]]; then
  echo "FAIL user files like temporaries: $(ls -A "$tmp/tmps")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

echo "cli: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
