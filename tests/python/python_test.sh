#!/usr/bin/env bash
# The Python module as a user installs it: a fresh virtual environment (no pip, no network), the
# module installed into it with `cmake --install --component python`, docs/python.md's example run
# with its interpreter, and its numbers checked against the tenet command's on the same topology
# file.
# Env: BUILD (the build tree), SRC (the source tree), TENET (the tenet binary), PYTHON (the
# interpreter the module was built for).
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PYTHON" -m venv --without-pip "$tmp/venv" || fail "$PYTHON -m venv"
cmake --install "$BUILD" --component python --prefix "$tmp/venv" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install --component python"; }
py="$tmp/venv/bin/python"
(cd "$tmp" && "$py" -c "import tenet; print(tenet.__file__)") | grep -qF "$tmp/venv/" ||
  fail "import tenet does not load the module installed in the environment"

awk '/<!-- example: example.py -->/ {on = 1; next} on && /^```python/ {copy = 1; next}
     copy && /^```/ {exit} copy {print}' "$SRC/docs/python.md" > "$tmp/example.py"
[[ -s $tmp/example.py ]] || fail "no example in docs/python.md"
topology="$SRC/examples/topologies/dgx1-pair.yaml"
(cd "$tmp" && "$py" example.py "$topology" "$tmp/out") > "$tmp/run.txt" ||
  { cat "$tmp/run.txt"; fail "the example does not run"; }
cat "$tmp/run.txt"
value() { awk -v k="$1" '$1 == k {print $2}' "$tmp/run.txt"; }

cli_synth() { "$TENET" synth -t "$topology" -c all-reduce -s 16MiB --no-cache --json --algo "$1" -o "$tmp/cli-$1"; }
cli_synth tenet > "$tmp/tenet.json"
tenet_ps=$(jq -r .time_ps "$tmp/tenet.json")
bound_ps=$(jq -r .lower_bound_ps "$tmp/tenet.json")
ring_ps=$(cli_synth ring | jq -r .time_ps)
transfers=$(jq -r .transfers "$tmp/tenet.json")
iteration_ps=$("$TENET" sim -t "$topology" -w resnet50 --coll all-reduce=ring --no-cache --json | jq -r .iteration_ps)
[[ $(value tenet_ps) == "$tenet_ps" ]] || fail "tenet: Python says $(value tenet_ps) ps, the command $tenet_ps ps"
[[ $(value bound_ps) == "$bound_ps" ]] || fail "bound: Python says $(value bound_ps) ps, the command $bound_ps ps"
[[ $(value ring_ps) == "$ring_ps" ]] || fail "ring: Python says $(value ring_ps) ps, the command $ring_ps ps"
[[ $(value transfers) == "$transfers" ]] || fail "transfers: Python lists $(value transfers), the command $transfers"
[[ $(value iteration_ps) == "$iteration_ps" ]] ||
  fail "resnet50: Python says $(value iteration_ps) ps, the command $iteration_ps ps"
[[ $(value chakra_files) -gt 0 && -n $(find "$tmp/out" -name '*.et' -print -quit) ]] || fail "no Chakra files written"
[[ $(value not_applicable) == rhd ]] || fail "rhd on all-to-all: $(value not_applicable)"

# Errors: a tenet.Error with the command's message.
msg=$("$py" -c "
import tenet
try:
    tenet.load_topology('$tmp/missing.yaml')
except tenet.Error as e:
    print('caught', isinstance(e, ValueError), e)
")
[[ $msg == "caught True"*"$tmp/missing.yaml"* ]] || fail "a missing topology: $msg"
msg=$("$py" -c "
import tenet
t = tenet.load_topology('ring:4')
try:
    tenet.synthesize(t, 'all-reduce', '1MiB', chunks_per_npu=4, algorithm='ring', ranks='0-9')
except tenet.Error as e:
    print('caught', e)
")
[[ $msg == caught*9* ]] || fail "ranks out of range: $msg"

# Runtime protocols: a preset lists them, and its ring at 1 MiB runs LL, as the command says.
msg=$("$py" -c "
import tenet
t = tenet.load_topology('dgx-a100')
s = tenet.synthesize(t, 'all-reduce', '1MiB', algorithm='ring')
print([p['name'] for p in t.protocols], s['algorithm'].protocol)
")
cli=$("$TENET" synth -t dgx-a100 -c all-reduce -s 1MiB --algo ring --no-cache --json -o "$tmp/proto" | jq -r .protocol)
[[ $msg == "['LL', 'LL128', 'Simple'] $cli" && $cli == LL ]] || fail "protocols: Python says $msg, the command $cli"
echo "PASS: installed into a virtual environment; the example's numbers are the command's"
