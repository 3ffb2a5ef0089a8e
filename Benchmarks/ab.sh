#!/usr/bin/env bash
# A/B of the main package at a git ref (A) against this working tree (B), on one harness:
# Benchmarks/Shapes (this checkout's) built in release against each, the two binaries run
# alternately, and each row's median over the runs printed for A and B with B/A (and Shapes'
# second column, OpenCombine for most rows, measured in the same runs, as anchor/A and anchor/B).
# Used on every change to a delivery engine (issue 38): a ratio in one run is what a shared
# machine can give.
#
#   Benchmarks/ab.sh e0f3054                                  # the core rows, 5 runs each
#   Benchmarks/ab.sh e0f3054 --filter 'senders' --runs 3      # other rows (Shapes' --filter)
#   Benchmarks/ab.sh e0f3054 --filter 'sender' --sluice-only  # Sluice's rounds back to back
#
# Only Shapes and what it needs (the main package, OpenCombine) are built, in .build-ab/ (kept
# between runs: a second A/B of the same ref rebuilds only B).
set -euo pipefail
ref=$1
shift
filter='^subject\.sink|^subject\.eraseToAnyPublisher|^subject\.map\.filter\.sink|^s1\.merge\(with: s2\) →|1 sink, 1 sender'
runs=5
rounds=3
only=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --filter) filter=$2; shift 2 ;;
    --sluice-only) only=(--sluice-only); shift ;;
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work="$here/.build-ab"
mkdir -p "$work"
commit=$(git -C "$root" rev-parse --verify "$ref^{commit}")

# A's sources (Package.swift and Sources at the ref), refreshed when the ref changes.
if [[ "$(cat "$work/a-commit" 2>/dev/null)" != "$commit" ]]; then
  rm -rf "$work/sluice-a" "$work/harness-a"
  mkdir -p "$work/sluice-a"
  git -C "$root" archive "$commit" | tar -x -C "$work/sluice-a"
  echo "$commit" >"$work/a-commit"
fi

# One harness package per side: Shapes' main.swift against that side's package.
harness() {
  local side=$1 path=$2
  local dir="$work/harness-$side"
  mkdir -p "$dir/Sources/Shapes"
  cp "$here/Benchmarks/Shapes/main.swift" "$dir/Sources/Shapes/main.swift"
  cat >"$dir/Package.swift" <<MANIFEST
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
  name: "harness-$side",
  dependencies: [
    .package(path: "$path"),
    .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
  ],
  targets: [
    .executableTarget(
      name: "Shapes",
      dependencies: [
        .product(name: "Sluice", package: "$(basename "$path")"),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ])
  ],
  swiftLanguageModes: [.v6]
)
MANIFEST
  # A release build keeps stale inlined copies of changed @inlinable code (Benchmarks/README.md):
  # B's objects of the main package are rebuilt each time.
  if [[ $side == b ]]; then
    rm -rf "$dir"/.build/*/release/{SluiceCore,SluiceAsync,SluiceTesting,Sluice,Combine,Shapes}.build
  fi
  echo "ab.sh: building $side ($path)" >&2
  if ! swift build -c release --package-path "$dir" --product Shapes >"$work/build-$side.log" 2>&1; then
    cat "$work/build-$side.log" >&2
    exit 1
  fi
}
harness a "$work/sluice-a"
harness b "$root"

model=$(lscpu | sed -n 's/^Model name: *//p')
echo "A = $ref ($commit), B = working tree ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo ', modified'))"
echo "CPU: $model; load average before: $(cut -d' ' -f1-3 /proc/loadavg); $runs alternating runs of $rounds rounds"
for ((run = 1; run <= runs; run++)); do
  for side in a b; do
    "$work/harness-$side/.build/release/Shapes" --filter "$filter" --rounds "$rounds" "${only[@]}" |
      sed -n "s/^| \(.*\) | \([0-9.]*\) | \([0-9.]*\) | .*/$side\t\1\t\2\t\3/p" >>"$work/results.$$"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/results.$$" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1], encoding="utf-8"):
    side, name, value, anchor = line.rstrip("\n").split("\t")
    row = rows.setdefault(name, {"a": [], "b": [], "anchor a": [], "anchor b": []})
    row[side].append(float(value))
    row["anchor " + side].append(float(anchor))
# The anchor is Shapes' second column, measured in the same runs (OpenCombine, for all rows but
# the AsyncSequence one): anchor/A and anchor/B above 1 mean Sluice is faster.
print("| row | A ns | B ns | B/A | A runs | B runs | anchor/A | anchor/B |")
print("|---|---|---|---|---|---|---|---|")
for name, sides in rows.items():
    a, b = statistics.median(sides["a"]), statistics.median(sides["b"])
    # (0 with --sluice-only: no anchor measured.)
    ratio = lambda side, x: f"{statistics.median(sides['anchor ' + side]) / x:.2f}x" \
        if statistics.median(sides["anchor " + side]) > 0 else "—"
    spread = lambda xs: "–".join(f"{x:.1f}" for x in (min(xs), max(xs)))
    print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.3f} | {spread(sides['a'])} | {spread(sides['b'])}"
          f" | {ratio('a', a)} | {ratio('b', b)} |")
PY
rm -f "$work/results.$$"
