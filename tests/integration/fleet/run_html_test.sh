#!/usr/bin/env bash
# The fleet report's HTML page in a real headless Chromium: synthetic records
# for 2,000 nodes, `launchguard fleet --format html`, then the page opened
# through the DevTools protocol (render_in_chromium.mjs): no console message,
# no request beyond the file, and a screenshot left in OUT_DIR to look at.
# Then the same for a page with history (each node checked six times): its
# over-time plot must draw one line per class.
# usage: run_html_test.sh LAUNCHGUARD OUT_DIR [CHROMIUM]
set -euo pipefail
launchguard="$1" out="$2" chromium="${3:-chromium}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v "$chromium" >/dev/null || { echo "FAIL: $chromium not found (scripts/install-test-tools.sh installs it)"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
python3 "$here/make_node_records.py" 2000 "$out/records.jsonl"
set +e
"$launchguard" fleet --format html -o "$out/fleet.html" "$out/records.jsonl"
code=$?
set -e
[ "$code" -le 1 ] || { echo "FAIL: launchguard fleet exited $code"; exit 1; }
node --experimental-websocket --no-warnings "$here/render_in_chromium.mjs" "$chromium" "$out/fleet.html" "$out/fleet.png"
[ -s "$out/fleet.png" ] || { echo "FAIL: no screenshot"; exit 1; }
echo "screenshot: $out/fleet.png"

python3 "$here/make_node_records.py" 2000 "$out/history.jsonl" --history 6
set +e
"$launchguard" fleet --format html -o "$out/fleet-history.html" "$out/history.jsonl"
code=$?
set -e
[ "$code" -le 1 ] || { echo "FAIL: launchguard fleet (history) exited $code"; exit 1; }
grep -q '<svg[^>]*class="history"' "$out/fleet-history.html" || { echo "FAIL: no over-time plot"; exit 1; }
node --experimental-websocket --no-warnings "$here/render_in_chromium.mjs" "$chromium" "$out/fleet-history.html" \
  "$out/fleet-history.png" "svg.history polyline.history-line" 3
echo "screenshot: $out/fleet-history.png"
