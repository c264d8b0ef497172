#!/usr/bin/env bash
# Builds pev's libFuzzer targets (tests/fuzz; clang, ASan + UBSan) and runs each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    default: 60 s per target, every target
#   make fuzz FUZZ_SECONDS=600               the long run (10 minutes per target)
#   PEV_FUZZ_JOBS=N                          targets run at a time (default: the number of cores)
#
# Each target starts from its committed seed corpus (read only) and writes what it finds new to
# build-fuzz/corpus/TARGET (kept between runs). A crash, leak or sanitizer report stops the target
# with a non-zero exit: the input is saved as build-fuzz/findings/TARGET/crash-* (add it to the
# target's corpus directory once fixed, and `make test` replays it from then on). At the end one line
# per target gives executions, coverage (cov: edges) and features (ft), as libFuzzer reports them.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${PEV_FUZZ_BUILD_DIR:-build-fuzz}

scripts/install-deps.sh
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang)" >&2
  exit 2
fi
CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPEV_FUZZ=ON >/dev/null
mapfile -t lines < "$build/fuzz-targets.txt"
names=()
for line in "${lines[@]}"; do names+=("${line%% *}"); done
wanted=("$@")
[[ ${#wanted[@]} -eq 0 ]] && wanted=("${names[@]}")
cmake --build "$build" -j "$(nproc)" --target "${wanted[@]/#/fuzz_}"

# libFuzzer runs a target on one core: PEV_FUZZ_JOBS targets (default: the number of cores) run
# at a time, each for the full SECONDS on its own core.
jobs=${PEV_FUZZ_JOBS:-$(nproc)}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: PEV_FUZZ_JOBS must be a positive integer, not '$jobs'" >&2
  exit 2
fi

# run_target NAME EXE DIRS...: one bounded run; its exit status is libFuzzer's.
run_target() {
  local name=$1 exe=$2
  shift 2
  local corpus="$build/corpus/$name" findings="$build/findings/$name"
  mkdir -p "$corpus" "$findings"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$exe" "$corpus" "$@" -max_total_time="$seconds" -rss_limit_mb=3072 -malloc_limit_mb=2560 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" >"$build/fuzz-$name.log" 2>&1
}

declare -A pid_of
order=()
running=0
for line in "${lines[@]}"; do
  read -r name exe dirs <<<"$line"
  [[ " ${wanted[*]} " == *" $name "* ]] || continue
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz: $name for ${seconds}s (log: $build/fuzz-$name.log)" >&2
  # shellcheck disable=SC2086
  run_target "$name" "$exe" $dirs &
  pid_of[$name]=$!
  order+=("$name")
  running=$((running + 1))
done

status=0
summary=()
for name in "${order[@]}"; do
  log="$build/fuzz-$name.log"
  findings="$build/findings/$name"
  if wait "${pid_of[$name]}"; then
    result=ok
  else
    result="FAILED (exit $?; see $log and $findings)"
    status=1
  fi
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || echo "cov: ? ft: ?")
  summary+=("$(printf '%-12s %-8s executions %-10s %s' "$name" "$result" "$execs" "$cov")")
done
printf '%s\n' "${summary[@]}"
exit $status
