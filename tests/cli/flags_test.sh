#!/usr/bin/env bash
# A property of the whole command line: every option that takes a value, of every command, given a
# value out of a hostile set (0, negative, huge, fractional, non-numeric, empty, overflowing) or a
# seeded random one, finishes within a time bound with exit 0 (done) or 2 (bad input): never a
# crash, an internal error (exit 1), a hang, or another exit code. The options are read from each
# command's --help, so a new option is covered the day it is added.
# Needs $TENET. Optional: $FLAGS_SEED (default 1), $FLAGS_RANDOM (random values per option, 2).
set -u
T=$TENET
seed=${FLAGS_SEED:-1}
random_values=${FLAGS_RANDOM:-2}
bound=60  # seconds per run; a cheap base command with one hostile value takes well under 1 s
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/xdg"
cd "$tmp" || exit 1
RANDOM=$seed

# Fixtures the base commands read: a 4-NPU ring All-Gather, a 4-rank workload, a tiny suite.
"$T" synth -t ring:4 -c all-gather -s 64KiB -a ring -o alg --no-cache > /dev/null || exit 1
"$T" workload gen -c all-reduce -s 1MiB -n 4 -o wl/w > /dev/null || exit 1
cat > suite.yaml << 'EOF'
topologies: [ring:4]
collectives: [all-gather]
sizes: [64KiB]
algorithms: [ring]
EOF

# Each command with a cheap valid base: the fuzzed option is appended (the last value wins).
commands=(
  "topo info|topo info ring:4"
  "topo convert|topo convert ring:4 -o out.yaml"
  "synth|synth -t ring:4 -c all-gather -s 64KiB -o out --no-cache"
  "verify|verify alg/algorithm.json -t ring:4"
  "export|export alg/algorithm.json -t ring:4 -o exp"
  "sim|sim -w wl/w -t ring:4 --no-cache"
  "workload gen|workload gen -c all-reduce -s 1MiB -n 4 -o gen/w"
  "bench|bench suite.yaml -o bout --no-cache"
)

hostile=(0 -1 65536 2147483648 18446744073709551616 -9223372036854775809 1e308 nan inf 1.5 x ""
  -1KiB 99999999999999999999999999 1us)
pool=(3 7 8 16 31 33 100 1000 4096 1000000 123456789 0.5 2.5 -2 -0.0 1e3 1e9 64KiB 1MiB 1TiB
  1PiB 500ms 30s 1h 10GB/s auto all none on off 1,2 0-3 ring tenet json chakra msccl-xml)

pass=0
fail=0
runs=0
for entry in "${commands[@]}"; do
  name=${entry%%|*}
  read -r -a base <<< "${entry#*|}"
  # "  -k,--chunks-per-npu TEXT=auto": an option with a value (a type follows its name).
  mapfile -t options < <("$T" ${name} --help | sed -nE 's/^ +(-[A-Za-z0-9],)?(--[a-z0-9-]+) [^ ].*/\2/p' |
    grep -vx -- '--help' | sort -u)
  if [[ ${#options[@]} -eq 0 ]]; then
    echo "FAIL $name: no options with values found in its --help"
    fail=$((fail + 1))
    continue
  fi
  for option in "${options[@]}"; do
    values=("${hostile[@]}")
    for ((i = 0; i < random_values; ++i)); do values+=("${pool[RANDOM % ${#pool[@]}]}"); done
    for value in "${values[@]}"; do
      runs=$((runs + 1))
      out=$(timeout -s KILL "$bound" "$T" "${base[@]}" "$option" "$value" 2>&1 < /dev/null)
      rc=$?
      if [[ $rc -eq 0 || $rc -eq 2 ]]; then
        pass=$((pass + 1))
        continue
      fi
      fail=$((fail + 1))
      case $rc in
        137) why="killed after ${bound} s" ;;
        1) why="exit 1 (an internal error)" ;;
        *) why="exit $rc" ;;
      esac
      echo "FAIL tenet ${base[*]} $option '$value': $why"
      echo "$out" | tail -3 | sed 's/^/    /'
    done
  done
done
echo "$runs runs, $pass passed, $fail failed (seed $seed)"
[[ $fail -eq 0 ]]
