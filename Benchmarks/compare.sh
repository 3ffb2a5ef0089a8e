#!/usr/bin/env bash
# Builds the benchmarks in release mode, runs every scenario for Sluice and its anchors, and
# prints one table: scenario, anchor, medians per element, ratio, allocations, and the CPU model.
#
# Each scenario (all its implementations) runs in a process of its own: package-benchmark runs
# async benchmarks by blocking a cooperative thread, and on a 2-core host the pool is then one
# thread, which a scenario run after many others in the same process could starve for good.
#
#   Benchmarks/compare.sh                      # every scenario
#   Benchmarks/compare.sh --scenarios 'send'   # scenarios whose name contains a match (Python regex)
#   Benchmarks/compare.sh --scenarios 'zip' --max-duration 3   # more package-benchmark options
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
# COMPARE_KEEP=1 keeps the raw results (package-benchmark's JMH files) and prints where.
if [[ -n "${COMPARE_KEEP:-}" ]]; then
  trap 'echo "compare.sh: results kept in $out" >&2' EXIT
else
  trap 'rm -rf "$out"' EXIT
fi

# An incremental release build can keep stale inlined copies of the main package's code in the
# modules that use it (seen as link errors, and as crashes in code that read an old class
# layout). When the main package's sources changed since the last run, the modules of this
# package's and the main package's targets are deleted, so that they are compiled again; the
# dependencies' (OpenCombine, package-benchmark, ...) are kept.
fingerprint=$(
  {
    git -C .. rev-parse HEAD
    git -C .. diff HEAD -- Sources Package.swift Examples
    git -C .. ls-files --others --exclude-standard -- Sources Examples | (cd .. && xargs -r sha1sum)
  } | sha1sum | cut -d' ' -f1
)
stamp=.build/sluice-sources.sha1
if [[ -f $stamp && "$(cat "$stamp")" != "$fingerprint" ]]; then
  for package in . ..; do
    swift package --package-path "$package" dump-package |
      python3 -c 'import json, sys; print("\n".join(t["name"] for t in json.load(sys.stdin)["targets"]))'
  done | while IFS= read -r name; do
    rm -rf .build/*/release/"$name".build
  done
  echo "compare.sh: the main package changed since the last build: its modules are rebuilt" >&2
fi
mkdir -p .build
echo "$fingerprint" >"$stamp"

pattern=''
if [[ "${1:-}" == "--scenarios" ]]; then
  pattern=$2
  shift 2
fi

if ! swift package --disable-sandbox benchmark list >"$out/list.log" 2>&1; then
  cat "$out/list.log"
  exit 1
fi
# Scenario names, in order, once each; a filter that matches exactly their implementations.
python3 - "$out/list.log" "$pattern" >"$out/filters" <<'PY'
import re, sys
pattern = sys.argv[2]
seen = []
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if " | " not in line or line.startswith("|"):
        continue
    scenario = line.rsplit(" | ", 1)[0]
    if scenario not in seen and (not pattern or re.search(pattern, scenario)):
        seen.append(scenario)
for scenario in seen:
    # package-benchmark matches its filter against the whole name as a regular expression.
    print(re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", scenario) + r" \| .*")
PY

index=0
total=$(wc -l <"$out/filters")
while IFS= read -r filter; do
  index=$((index + 1))
  mkdir -p "$out/$index"
  status=0
  started=$SECONDS
  echo "compare.sh: [$index/$total] ${filter% \\| .\*}" >&2
  for attempt in 1 2; do
    status=0
    timeout 300 swift package --disable-sandbox benchmark --format jmh --path "$out/$index" \
      --filter "$filter" "$@" >"$out/$index/run.log" 2>&1 </dev/null || status=$?
    [[ $status == 124 ]] || break
    # Stuck (see above: on a 2-core host libdispatch sometimes starts no thread for a row's
    # task): killed, and tried once more.
    pkill -f 'SluiceBenchmarks --input-fd' || true
    echo "compare.sh:   attempt $attempt timed out after 5 minutes" >&2
  done
  if [[ $status == 124 ]]; then
    echo "compare.sh: skipped (timed out twice): $filter" >&2
  elif [[ $status != 0 ]]; then
    cat "$out/$index/run.log"
    exit 1
  fi
  echo "compare.sh:   done in $((SECONDS - started)) s" >&2
done <"$out/filters"

# The real-time rows (queues, timers, an actor's worker) run in a plain executable: see
# Benchmarks/RealTime/main.swift for why not in package-benchmark.
if ! swift build -c release --product RealTime >"$out/realtime-build.log" 2>&1; then
  cat "$out/realtime-build.log"
  exit 1
fi
.build/release/RealTime --list >"$out/realtime-list"
python3 - "$out/realtime-list" "$pattern" >"$out/realtime-filters" <<'PY'
import re, sys
pattern = sys.argv[2]
seen = []
for line in open(sys.argv[1], encoding="utf-8"):
    scenario = line.rstrip("\n").rsplit(" | ", 1)[0]
    if scenario not in seen and (not pattern or re.search(pattern, scenario)):
        seen.append(scenario)
for scenario in seen:
    print("^" + re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", scenario) + r" \| ")
PY
total=$(wc -l <"$out/realtime-filters")
index=0
while IFS= read -r filter; do
  index=$((index + 1))
  mkdir -p "$out/realtime-$index"
  started=$SECONDS
  echo "compare.sh: [real time $index/$total] ${filter% \\| }" >&2
  status=0
  timeout 300 .build/release/RealTime --filter "$filter" \
    --json "$out/realtime-$index/results.jmh.json" 2>"$out/realtime-$index/run.log" || status=$?
  if [[ $status != 0 ]]; then
    echo "compare.sh: failed ($status): $filter" >&2
    cat "$out/realtime-$index/run.log" >&2
  fi
  echo "compare.sh:   done in $((SECONDS - started)) s" >&2
done <"$out/realtime-filters"

lscpu | grep -m1 'Model name' || true
python3 - "$out"/*/*.jmh.json <<'PY'
import json, re, sys

ELEMENTS = 1000  # values per iteration: `elements` in SluiceBenchmarks.swift
TO_NS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

rows = {}
for path in sys.argv[1:]:
    for entry in json.load(open(path)):
        # JMH names replace spaces with underscores.
        name = re.sub(r"^(.*SluiceBenchmarks|RealTime)\.", "", entry["benchmark"]).replace("_", " ")
        if " | " not in name:
            continue
        scenario, implementation = name.rsplit(" | ", 1)
        metrics = entry.get("secondaryMetrics", {})
        wall = metrics.get("Time (wall clock)")
        mallocs = metrics.get("Malloc (total)")
        if not wall:
            continue
        median_ns = wall["scorePercentiles"]["50.0"] * TO_NS.get(wall["scoreUnit"], 1)
        allocs = mallocs["scorePercentiles"]["50.0"] if mallocs else float("nan")
        scale = 1e3 if mallocs and mallocs.get("scoreUnit", "").startswith("K") else 1
        # Only rows marked "(may drop)" measure it; others carry a stale value.
        share = metrics.get("delivered ‰") if implementation.endswith("(may drop)") else None
        rows.setdefault(scenario, {})[implementation] = (
            median_ns / ELEMENTS, allocs * scale / ELEMENTS,
            f"{share['scorePercentiles']['50.0'] / 10:.1f}%" if share else "100%")

header = ("scenario", "anchor", "Sluice ns", "anchor ns", "anchor/Sluice", "Sluice allocs",
          "anchor allocs", "anchor delivered")
lines = []
for scenario, impls in rows.items():
    sluice = impls.get("Sluice")
    for implementation, (ns, allocs, share) in impls.items():
        if implementation.startswith("Sluice") or sluice is None:
            continue
        lines.append((scenario, implementation, f"{sluice[0]:.1f}", f"{ns:.1f}",
                      f"{ns / sluice[0]:.2f}x", f"{sluice[1]:.2f}", f"{allocs:.2f}", share))
    for implementation, (ns, allocs, share) in impls.items():
        if implementation.startswith("Sluice") and implementation != "Sluice":
            lines.append((scenario, implementation + " (variant)", f"{sluice[0]:.1f}", f"{ns:.1f}",
                          f"{ns / sluice[0]:.2f}x", f"{sluice[1]:.2f}", f"{allocs:.2f}", share))

print("| " + " | ".join(header) + " |")
print("|" + "|".join("---" for _ in header) + "|")
for line in lines:
    print("| " + " | ".join(line) + " |")
print()
print("Per element (per send / per cycle where the scenario says so); medians of one run.")
print("anchor/Sluice > 1 means Sluice is faster. Allocations are malloc calls per element.")
print("Delivered: share of the values that reached the consumer (lossless rows are checked).")
PY

# The liveness rows (Probes/Liveness): a second thread's call latency while another thread sends
# without pause, Sluice next to OpenCombine, in the same run. Run with the full table only
# (`--scenarios` selects package-benchmark rows).
if [[ -z "$pattern" ]]; then
  if swift build -c release --product Liveness >"$out/liveness-build.log" 2>&1; then
    echo
    timeout 600 .build/release/Liveness --runs 3 || echo "compare.sh: the liveness probe failed" >&2
  else
    cat "$out/liveness-build.log" >&2
  fi
fi
