#!/usr/bin/env bash
# Tenet's one entry point: ./tenet.sh deps | build | test | demo | bench | sanitize | fuzz | format
#   deps   install the Debian packages Tenet needs (only those missing; needs root for that)
#   build  configure and build (Release) into ./build
#   test   deps + build + every test (ctest); exits non-zero on any failure
#   demo   deps + build of the CLI alone + the main job on an embedded default topology
#   bench  deps + build + the Google Benchmark microbenchmarks and `tenet bench --quick`
#   sanitize  deps + an AddressSanitizer + UndefinedBehaviorSanitizer build in build-sanitize, and every test
#   fuzz [HARNESS[,HARNESS...]|all] [SECONDS]  clang + libFuzzer build in build-fuzz; each harness SECONDS
#            (default 60) on its growing corpus; this run's findings in build-fuzz/findings/<harness>/
#   format [fix]  check every C++ file against .clang-format (Debian's clang-format); `fix` rewrites them
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

BUILD_DIR=${TENET_BUILD_DIR:-build}
JOBS=${TENET_JOBS:-$(nproc 2>/dev/null || echo 2)}
# Two NVSwitch nodes of 8 NPUs on a slower rail-optimised scale-out network.
DEMO_TOPOLOGY="nvcluster:2x8,net=rail,bw=450GB/s/50GB/s,lat=0.25us/1us"

PACKAGES=(
  cmake g++ make
  libboost-graph-dev liblemon-dev libglpk-dev
  libprotobuf-dev protobuf-compiler
  libfmt-dev libcli11-dev nlohmann-json3-dev libsimdjson-dev libyaml-cpp-dev libpugixml-dev
  gnuplot-nox jq
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-venv
)

# Only for `./tenet.sh format`: Debian's clang-format (the version .clang-format is checked with).
FORMAT_PACKAGES=(clang-format)

# Only for `./tenet.sh fuzz`: clang and its libFuzzer runtime.
FUZZ_PACKAGES=(clang libclang-rt-dev)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

deps() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    log "dependencies: all ${#PACKAGES[@]} Debian packages present"
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: missing Debian packages: ${missing[*]}" >&2
    echo "       run as root, or install them yourself: sudo apt-get install ${missing[*]}" >&2
    return 1
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {  # build [target]: everything, or one target (the demo builds only the CLI, `tenet`)
  log "building (Release) in $BUILD_DIR${1:+: $1}"
  mkdir -p "$BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release > "$BUILD_DIR/configure.log" 2>&1 ||
    { cat "$BUILD_DIR/configure.log" >&2; return 1; }
  cmake --build "$BUILD_DIR" --parallel "$JOBS" ${1:+--target "$1"}
}

run_tests() {
  log "testing"
  (cd "$BUILD_DIR" && ctest --output-on-failure --parallel "$JOBS")
}

demo() {
  log "the topology: tenet topo info '$DEMO_TOPOLOGY'"
  "$BUILD_DIR/cli/tenet" topo info "$DEMO_TOPOLOGY"
  log "synthesizing All-Reduce of 256 MiB: tenet synth --coll all-reduce --chunks-per-npu auto"
  "$BUILD_DIR/cli/tenet" synth --topo "$DEMO_TOPOLOGY" --coll all-reduce --size 256MiB \
    --chunks-per-npu auto -o out/demo
  log "beside every baseline, with the lower bound: tenet synth --algo all"
  "$BUILD_DIR/cli/tenet" synth --topo "$DEMO_TOPOLOGY" --coll all-reduce --size 256MiB --algo all \
    --chunks-per-npu 4 -o out/demo/compare
  log "checking it independently: tenet verify out/demo/algorithm.json"
  "$BUILD_DIR/cli/tenet" verify out/demo/algorithm.json --topo "$DEMO_TOPOLOGY"
  log "exporting it for ASTRA-sim: tenet export --format chakra"
  "$BUILD_DIR/cli/tenet" export out/demo/algorithm.json --topo "$DEMO_TOPOLOGY" --format chakra \
    -o out/demo | tail -n 3
  # MSCCL-XML holds at most 32 channels of 32 thread blocks of 64 steps: not a pipeline of hundreds
  # of chunks per NPU, so MSCCL gets the 4-chunk synthesis of the comparison above.
  log "exporting the 4-chunk synthesis for the MSCCL runtime: tenet export --format msccl-xml"
  "$BUILD_DIR/cli/tenet" export out/demo/compare/tenet.json --topo "$DEMO_TOPOLOGY" --format msccl-xml \
    -o out/demo | tail -n 1
  for algo in tenet ring; do
    log "one data-parallel ResNet-50 training iteration, All-Reduce by $algo: tenet sim"
    "$BUILD_DIR/cli/tenet" sim --workload resnet50 --topo "$DEMO_TOPOLOGY" --coll "all-reduce=$algo" \
      --trace "out/demo/trace-$algo.json" | grep -E "^iteration|exposed"
  done
  log "the same iteration on the packet-level network (4 KiB packets, credit flow control): tenet sim --network packet"
  "$BUILD_DIR/cli/tenet" sim --workload resnet50 --topo "$DEMO_TOPOLOGY" --network packet --links 4 |
    grep -vE "^(workload|topology|collectives|events)"
}

bench() {
  log "Google Benchmark microbenchmarks"
  "$BUILD_DIR/bench/tenet_micro_bench" --benchmark_counters_tabular=true "$@"
  log "the quick comparison suite: tenet bench --quick -o out/bench"
  "$BUILD_DIR/cli/tenet" bench --quick -o out/bench
}

sanitize() {
  local dir=${TENET_SANITIZE_DIR:-build-sanitize}
  log "building with -fsanitize=address,undefined in $dir"
  mkdir -p "$dir"
  # (No Python module: an instrumented module does not load into an uninstrumented interpreter.)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENET_BUILD_PYTHON=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
    > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; return 1; }
  cmake --build "$dir" --parallel "$JOBS"
  log "testing under the sanitizers"
  # Leak checking is off: Open MPI's and protobuf's process-lifetime allocations are not leaks.
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure --parallel "$JOBS")
}

fuzz() {
  local which=${1:-all} seconds=${2:-60} dir=${TENET_FUZZ_DIR:-build-fuzz}
  local harnesses=(topology_yaml topology_dot topology_spec algorithm_json msccl_xml chakra_et workload bench_suite traffic)
  if [[ $which != all ]]; then
    local asked=() h
    IFS=, read -r -a asked <<< "$which"
    for h in "${asked[@]}"; do
      [[ " ${harnesses[*]} " == *" $h "* ]] ||
        { echo "error: unknown harness '$h' (harnesses: all ${harnesses[*]})" >&2; return 2; }
    done
    harnesses=("${asked[@]}")
  fi
  [[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] ||
    { echo "error: SECONDS must be a positive whole number, not '$seconds'" >&2; return 2; }
  log "building the fuzz harnesses with clang + libFuzzer + ASan/UBSan in $dir"
  mkdir -p "$dir"
  CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENET_FUZZER=ON -DTENET_MPI=OFF \
    > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; return 1; }
  cmake --build "$dir" --parallel "$JOBS" --target tenet_fuzz_all
  "$dir/tests/fuzz/tenet_fuzz_seeds" "$dir/seeds" > /dev/null
  log "fuzzing ${harnesses[*]}: ${seconds} s each, $JOBS at a time"
  local h running=0 failed=0
  for h in "${harnesses[@]}"; do
    rm -rf "$dir/findings/$h"  # this run's findings only (keep a fixed one in tests/fuzz/regressions/)
    mkdir -p "$dir/corpus/$h" "$dir/findings/$h"
    local inputs=("$dir/corpus/$h" "$dir/seeds/$h")
    [[ -d tests/fuzz/regressions/$h ]] && inputs+=("tests/fuzz/regressions/$h")
    # -timeout: an input that runs 30 s is a finding (a hang); -rss_limit_mb: so is 4 GiB.
    ASAN_OPTIONS=detect_leaks=0 "$dir/tests/fuzz/tenet_fuzz_$h" -max_total_time="$seconds" -timeout=30 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$dir/findings/$h/" "${inputs[@]}" \
      > "$dir/findings/$h.log" 2>&1 &
    running=$((running + 1))
    if [[ $running -ge $JOBS ]]; then wait -n || failed=1; running=$((running - 1)); fi
  done
  while [[ $running -gt 0 ]]; do wait -n || failed=1; running=$((running - 1)); done
  for h in "${harnesses[@]}"; do
    local runs secs found slow
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/findings/$h.log" | tail -n 1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/findings/$h.log" | tail -n 1)
    # crash-, timeout-, oom-, leak- files are findings; slow-unit- files (over 10 s) are noted only.
    found=$(find "$dir/findings/$h" -type f ! -name 'slow-unit-*' | wc -l)
    slow=$(find "$dir/findings/$h" -type f -name 'slow-unit-*' | wc -l)
    printf '%-16s %12s executions in %5s s  %3d findings  %3d slow inputs  (%s)\n' "$h" "${runs:-?}" "${secs:-?}" \
      "$found" "$slow" "$dir/findings/$h.log"
    [[ $found -eq 0 ]] || failed=1
  done
  [[ $failed -eq 0 ]] || { echo "fuzz: findings (reproduce: $dir/tests/fuzz/tenet_fuzz_<harness> FILE)" >&2; return 1; }
}

# Every C++ source of the repository, as .clang-format lays it out; `fix` rewrites them.
format() {
  local files
  # Tracked files and new ones not yet added (a new file is checked and fixed before `git add`).
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' 2>/dev/null ||
    find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print)
  if [[ ${1:-} == fix ]]; then
    clang-format -i "${files[@]}"
    return 0
  fi
  log "checking the layout of ${#files[@]} C++ files against .clang-format ($(clang-format --version))"
  clang-format --dry-run -Werror "${files[@]}" ||
    { echo "error: files above differ from .clang-format's layout (./tenet.sh format fix rewrites them)" >&2; return 1; }
}

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
}

verb=${1:-}
[[ $# -gt 0 ]] && shift
case "$verb" in
  deps) deps ;;
  build) deps && build ;;
  test) deps && build && run_tests ;;
  demo) deps && build tenet && demo ;;
  bench) deps && build && bench "$@" ;;
  sanitize) deps && sanitize ;;
  fuzz) deps "${FUZZ_PACKAGES[@]}" && fuzz "$@" ;;
  format) deps "${FORMAT_PACKAGES[@]}" && format "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
