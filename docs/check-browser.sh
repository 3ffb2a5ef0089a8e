#!/usr/bin/env bash
# Checks in a real browser that the documentation site shows the marble diagrams:
#
#   docs/check-browser.sh            # builds the site first (docs/build.sh)
#   docs/check-browser.sh --built    # uses docs/.build/site as it is
#
# Serves docs/.build/site over http (DocC's static site needs it), opens the operator overview
# article and three operator pages (debounce, buffer, asyncMap) in headless Chromium (Debian's
# `chromium`), and for each page:
#   - dumps the DOM of docs/browser/check.html, which loads the page in a frame, scrolls each
#     diagram into view and reports whether it loaded, its natural and on-page size and its
#     computed visibility; fails unless every diagram loaded with a non-zero size, visible;
#   - takes a screenshot into docs/.build/screenshots/ (light, and the overview again with the
#     browser set to dark mode, where the ~dark pictures must be the ones shown).
# Prints a summary line; exits non-zero on any missing or invisible diagram.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != "--built" ]]; then
  bash docs/build.sh
fi
site=docs/.build/site
shots=docs/.build/screenshots
[[ -d "$site/SluiceCore" ]] || { echo "check-browser: no site in $site (run docs/build.sh)"; exit 1; }
command -v chromium >/dev/null || { echo "check-browser: chromium is not installed (apt-get install chromium)"; exit 1; }
rm -rf "$shots"
mkdir -p "$shots"
cp docs/browser/check.html "$site/check.html"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$site" "$port" >"$shots/server.log" 2>&1 &
server=$!
profile=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT
for _ in $(seq 50); do
  curl -fs "http://127.0.0.1:$port/index.html" >/dev/null 2>&1 && break
  sleep 0.2
done

browser() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$profile" --hide-scrollbars "$@" 2>>"$shots/chromium.log"
}

# The overview must show every picture its article references.
overview_count=$(grep -c '^!\[' Sources/SluiceCore/SluiceCore.docc/MarbleDiagrams.md)
# name | page | diagrams expected at least | the picture that must be there
pages=(
  "overview|/SluiceCore/documentation/sluicecore/marblediagrams|$overview_count|debounce"
  "debounce|/SluiceCore/documentation/sluicecore/publisher/debounce(for:scheduler:options:)|1|debounce"
  "buffer|/SluiceCore/documentation/sluicecore/publisher/buffer(size:prefetch:whenfull:)|2|buffer-byRequest"
  "asyncMap|/SluiceAsync/documentation/sluiceasync/sluicecore/publisher/asyncmap(maxconcurrent:priority:_:)|2|asyncMap-maxConcurrent"
)
failed=0
checked=0
start=$(date +%s)
for entry in "${pages[@]}" \
  "overview-dark|/SluiceCore/documentation/sluicecore/marblediagrams|$overview_count|debounce~dark|dark"; do
  IFS='|' read -r name page expect picture theme <<<"$entry"
  url="http://127.0.0.1:$port/check.html?page=$page&expect=$expect"
  # The dark run asks for the dark colour scheme, as a browser set to dark mode does (DocC's
  # automatic theme then shows the ~dark pictures).
  scheme=()
  [[ "${theme:-}" == "dark" ]] && scheme=(--blink-settings=preferredColorScheme=0)
  browser "${scheme[@]}" --virtual-time-budget=60000 --window-size=1300,2500 --dump-dom "$url" \
    >"$shots/$name.html" || true
  report=$(sed -n '/<pre id="result">/,/<\/pre>/p' "$shots/$name.html" | sed 's/<[^>]*>//g')
  echo "$report" >"$shots/$name.txt"
  images=$(grep -c '^IMG' "$shots/$name.txt" || true)
  bad=$(grep '^IMG' "$shots/$name.txt" | grep -Ev ' loaded [1-9][0-9]*x[1-9][0-9]* [1-9][0-9]*x[1-9][0-9]* visible (inline|block|inline-block) 1$' || true)
  echo "$name: $(head -1 "$shots/$name.txt"), $images diagrams"
  if [[ "$images" -lt "$expect" ]]; then
    echo "  FAIL: expected at least $expect diagrams"
    failed=$((failed + 1))
  elif [[ -n "$bad" ]]; then
    echo "  FAIL: diagrams not loaded or not visible:"
    echo "$bad" | sed 's/^/    /'
    failed=$((failed + 1))
  elif ! grep -q "/images/[^ ]*/$picture\.svg\|/images/$picture\.svg" "$shots/$name.txt"; then
    echo "  FAIL: $picture.svg is not on the page"
    failed=$((failed + 1))
  fi
  checked=$((checked + 1))
  # The page itself, as a person sees it.
  browser "${scheme[@]}" --virtual-time-budget=30000 --window-size=1300,1400 \
    --screenshot="$shots/$name.png" "http://127.0.0.1:$port$page" >/dev/null || true
done
echo "check-browser: $checked pages in $(( $(date +%s) - start )) s, screenshots in $shots"
echo "browser check: $((checked - failed)) passed, $failed failed"
[[ "$failed" -eq 0 ]]
