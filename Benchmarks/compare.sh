#!/usr/bin/env bash
# Builds the benchmarks in release mode, runs every scenario for Sluice and its anchors in one
# process, and prints one table: scenario, anchor, medians per element, ratio, allocations.
#
#   Benchmarks/compare.sh                 # everything
#   Benchmarks/compare.sh --filter 'send' # only matching scenarios (package-benchmark options)
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if ! swift package --disable-sandbox benchmark --format jmh --path "$out" "$@" >"$out/run.log" 2>&1; then
  cat "$out/run.log"
  exit 1
fi

python3 - "$out"/*.jmh.json <<'PY'
import json, re, sys

ELEMENTS = 1000  # values per iteration: `elements` in SluiceBenchmarks.swift
TO_NS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

rows = {}
for path in sys.argv[1:]:
    for entry in json.load(open(path)):
        # JMH names replace spaces with underscores.
        name = entry["benchmark"].split("SluiceBenchmarks.", 1)[-1].replace("_", " ")
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
