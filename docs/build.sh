#!/usr/bin/env bash
# Builds the documentation site with the toolchain's own `docc` (no plugin, no dependency):
#
#   docs/build.sh            # then: python3 -m http.server -d docs/.build/site 8000
#                            # and open http://localhost:8000/
#
# 1. checks that the articles' code (Tests/SluiceExamplesTests/ArticleSnippets.swift, which the
#    test target compiles) is current;
# 2. writes the public symbol graphs with `swift package dump-symbol-graph`;
# 3. fails on a public symbol without a documentation comment;
# 4. converts each module's catalog (Sources/<Module>/<Module>.docc) with `docc convert
#    --warnings-as-errors` into a static site under docs/.build/site/<Module>/, with an index.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(Sluice SluiceCore SluiceAsync SluiceTesting SluiceNetworking)
out=docs/.build
rm -rf "$out"
mkdir -p "$out/site"

python3 docs/snippets.py --check

if ! swift package dump-symbol-graph --minimum-access-level public --emit-extension-block-symbols >"$out/symbol-graph.log" 2>&1; then
  cat "$out/symbol-graph.log"
  exit 1
fi
graphs=$(sed -n 's/^Files written to //p' "$out/symbol-graph.log")

python3 docs/check-documented.py "$graphs" "${modules[@]}"

for module in "${modules[@]}"; do
  mkdir -p "$out/symbols/$module"
  cp "$graphs/$module.symbols.json" "$out/symbols/$module/"
  for extension in "$graphs/$module"@*.symbols.json; do
    [[ -e "$extension" ]] && cp "$extension" "$out/symbols/$module/"
  done
  lower=$(echo "$module" | tr '[:upper:]' '[:lower:]')
  docc convert "Sources/$module/$module.docc" \
    --additional-symbol-graph-dir "$out/symbols/$module" \
    --fallback-display-name "$module" --fallback-bundle-identifier "org.sluice.$lower" \
    --transform-for-static-hosting --hosting-base-path "$module" \
    --warnings-as-errors --output-path "$out/site/$module" >"$out/$module.log" 2>&1 || {
    cat "$out/$module.log"
    echo "docs/build.sh: docc convert failed for $module"
    exit 1
  }
  echo "$module: $out/site/$module/documentation/$lower/"
done

{
  echo '<!doctype html><meta charset="utf-8"><title>Sluice documentation</title>'
  echo '<h1>Sluice documentation</h1><ul>'
  for module in "${modules[@]}"; do
    lower=$(echo "$module" | tr '[:upper:]' '[:lower:]')
    echo "<li><a href=\"$module/documentation/$lower/\">$module</a></li>"
  done
  echo '</ul>'
} >"$out/site/index.html"
echo "docs/build.sh: site in $out/site (serve it: python3 -m http.server -d $out/site 8000)"
