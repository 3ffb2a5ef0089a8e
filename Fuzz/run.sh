#!/usr/bin/env bash
# Runs every fuzz target (or those named) for a fixed time each, as many at once as there are
# cores ($FUZZ_JOBS), and prints executions per second and coverage (libFuzzer's `cov:`, edges
# reached) for each.
#
#   bash Fuzz/run.sh [SECONDS] [TARGET...]      # default: 60 s each, every target
#
# Each target starts from its seed corpus (Corpus/<Target>/, in the repository, inputs earlier
# crashes included) in a scratch copy, so a run adds nothing to the repository. A crash, a
# broken property, a leak, a timeout (an input running more than 30 s: every call must return
# after bounded work) or running out of memory stops the script with the input saved in
# $FUZZ_ARTIFACTS (default: a fresh temporary folder), its bytes in base64, and a non-zero
# status. Keep such an input: add it to Corpus/<Target>/, fix the defect, and add a test to the
# main package's suite that covers it (README.md).
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(MarbleFuzzer DemandFuzzer PipelineFuzzer FrameFuzzer)
fi
artifacts=${FUZZ_ARTIFACTS:-$(mktemp -d)}
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The fuzzer's instrumentation and the address sanitizer (leak detection included) in every
# Swift module: the targets, Sluice, SluiceNIO and SwiftNIO.
echo "building the fuzz targets (release, -sanitize=fuzzer,address)"
swift build -c release -Xswiftc -sanitize=fuzzer,address
bin=$(swift build -c release -Xswiftc -sanitize=fuzzer,address --show-bin-path)

# The Swift runtime's own crash handler would hold a crashing target for a symbolicated
# backtrace; libFuzzer and the sanitizer print theirs.
export SWIFT_BACKTRACE=enable=no

# Each target is one libFuzzer process on one core: $FUZZ_JOBS of them (default: the number of
# cores) run at once, so CI's 4 targets of 60 s take 2 minutes on 2 cores.
jobs=${FUZZ_JOBS:-$(nproc)}

run_target() {
  local target=$1
  mkdir -p "$work/$target"
  set +e
  "$bin/$target" "$work/$target" "Corpus/$target" -max_total_time="$seconds" -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$target-" >"$work/$target.log" 2>&1
  echo $? >"$work/$target.code"
}

for target in "${targets[@]}"; do
  echo "=== $target: ${seconds} s from $(find "Corpus/$target" -type f | wc -l) seed inputs"
  run_target "$target" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait

summary=()
status=0
for target in "${targets[@]}"; do
  log="$work/$target.log"
  code=$(cat "$work/$target.code")
  # Last status line: "#123456 ... cov: 1234 ft: 5678 corp: 90/1234b ... exec/s: 4321 ...".
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -Eo 'cov: [0-9]+' <<<"$last" | grep -Eo '[0-9]+' || echo "?")
  ft=$(grep -Eo 'ft: [0-9]+' <<<"$last" | grep -Eo '[0-9]+' || echo "?")
  corpus=$(grep -Eo 'corp: [0-9]+' <<<"$last" | grep -Eo '[0-9]+' || echo "?")
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  rate=$(grep -Eo 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  rss=$(grep -Eo 'stat::peak_rss_mb: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  line=$(printf '%-15s %10s runs %8s exec/s  cov: %6s  ft: %6s  corpus: %5s  peak RSS: %5s MB' \
    "$target" "$runs" "$rate" "$cov" "$ft" "$corpus" "$rss")
  echo
  echo "=== $target"
  if [ "$code" -ne 0 ]; then
    grep -v -E '^ +r[0-9a-z]+ 0x' "$log" | tail -80
    echo
    echo "$target FAILED (exit $code). The input is in $artifacts:"
    ls -l "$artifacts" | grep "$target-" || true
    grep -E '^Base64: ' "$log" || true
    line="$line  FAILED"
    status=1
  else
    tail -2 "$log"
  fi
  summary+=("$line")
done

echo
echo "=== fuzzing summary (${seconds} s each, $jobs at once; $(nproc) cores)"
printf '%s\n' "${summary[@]}"
exit "$status"
