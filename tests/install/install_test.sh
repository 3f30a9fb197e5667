#!/usr/bin/env bash
# The installed package, as a user's project finds it: `cmake --install` into a temporary prefix,
# a scratch project (docs/library.md's example and a find_package(Tenet) CMakeLists.txt) copied out
# of the source tree, configured with only that prefix, built and run; its numbers must be the
# tenet command's. Nothing in the installed package or the scratch build may point into the source
# or build tree.
# Env: BUILD (the build tree), SRC (the source tree), TENET (the tenet binary), CXX_FLAGS (the
# flags Tenet was built with: a sanitizer build's consumer links its runtime too).
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$tmp/prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
[[ -f $tmp/prefix/include/tenet/tenet/tenet.hpp ]] || fail "tenet/tenet.hpp not installed"
[[ -f $tmp/prefix/include/tenet/chakra/et_def.pb.h ]] || fail "the Chakra schema's header not installed"
# Only the public headers, and all of them: every header's own includes are installed beside it,
# and the internals (the matchers, the plans) are not.
inc=$tmp/prefix/include/tenet
missing=$(find "$inc" -name '*.hpp' | while read -r h; do
  sed -n 's/^#include "\([^"]*\)".*/\1/p' "$h" | while read -r dep; do
    [[ -f $inc/$dep || -f $(dirname "$h")/$dep ]] || echo "${h#"$inc"/} includes $dep"
  done
done)
[[ -z $missing ]] || fail "installed headers include headers not installed: $missing"
[[ ! -e $inc/synth/ten/event_loop.hpp && ! -e $inc/synth/plans/pipelines.hpp ]] ||
  fail "internal headers installed"
config=$(find "$tmp/prefix" -name TenetConfig.cmake)
[[ -n $config ]] || fail "TenetConfig.cmake not installed"
# The package names no path of the trees it was built in.
if grep -rlF -e "$SRC" -e "$BUILD" "$(dirname "$config")"; then fail "the package points into the source or build tree"; fi

# The scratch project: the docs' example, extracted from the code block after its marker.
mkdir -p "$tmp/project"
awk '/<!-- example: main.cpp -->/ {on = 1; next} on && /^```cpp/ {copy = 1; next}
     copy && /^```/ {exit} copy {print}' "$SRC/docs/library.md" > "$tmp/project/main.cpp"
[[ -s $tmp/project/main.cpp ]] || fail "no example in docs/library.md"
cat > "$tmp/project/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(tenet_consumer CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
find_package(Tenet 0.1 REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE Tenet::tenet)
CMAKE
cmake -S "$tmp/project" -B "$tmp/project/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "-DCMAKE_CXX_FLAGS=${CXX_FLAGS:-}" > "$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "find_package(Tenet) project does not configure"; }
cmake --build "$tmp/project/build" > "$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "find_package(Tenet) project does not build"; }
if grep -F -e "$SRC" -e "$BUILD" "$tmp/project/build/compile_commands.json"; then
  fail "the project's compile commands point into Tenet's source or build tree"
fi

(cd "$tmp" && ./project/build/consumer torus2d:3x3 "$tmp/out") > "$tmp/run.txt" ||
  { cat "$tmp/run.txt"; fail "the example does not run"; }
cat "$tmp/run.txt"
value() { awk -v k="$1" '$1 == k {print $2}' "$tmp/run.txt"; }
[[ -f $tmp/out/algorithm.json && -f $tmp/out/algorithm.xml ]] || fail "the example's export wrote no files"

# The same numbers from the command.
cli_synth() { "$TENET" synth -t torus2d:3x3 -c all-reduce -s 16MiB --no-cache --json --algo "$1" -o "$tmp/cli-$1"; }
cli_synth tenet > "$tmp/tenet.json"
cli_synth ring > "$tmp/ring.json"
tenet_ps=$(jq -r .time_ps "$tmp/tenet.json")
bound_ps=$(jq -r .lower_bound_ps "$tmp/tenet.json")
ring_ps=$(jq -r .time_ps "$tmp/ring.json")
iteration_ps=$("$TENET" sim -t torus2d:3x3 -w resnet50 --coll all-reduce=ring --no-cache --json | jq -r .iteration_ps)
[[ $(value tenet_ps) == "$tenet_ps" ]] || fail "tenet: the API says $(value tenet_ps) ps, the command $tenet_ps ps"
[[ $(value ring_ps) == "$ring_ps" ]] || fail "ring: the API says $(value ring_ps) ps, the command $ring_ps ps"
[[ $(value bound_ps) == "$bound_ps" ]] || fail "bound: the API says $(value bound_ps) ps, the command $bound_ps ps"
[[ $(value iteration_ps) == "$iteration_ps" ]] ||
  fail "resnet50: the API says $(value iteration_ps) ps, the command $iteration_ps ps"

# A bad topology: the command's message, exit 2.
rc=0
(cd "$tmp" && ./project/build/consumer "$tmp/missing.yaml" "$tmp/out2") 2> "$tmp/err.txt" || rc=$?
[[ $rc == 2 ]] && grep -qF "$tmp/missing.yaml" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "a missing topology: exit $rc"; }
echo "PASS: installed, found, built and run; the API's numbers are the command's"
