#!/usr/bin/env bash
# End-to-end checks of `nazar demo` and `nazar attention` outputs.
#   test_html_report.sh NAZAR cli       demo files; SVG well-formed (Python's XML parser) with one
#                                       cell per (output, source) pair whose fill darkens with the
#                                       weight; attention CLI: plain off a TTY, NO_COLOR, --color,
#                                       --svg/--html, usage errors exit 2
#   test_html_report.sh NAZAR chromium  the HTML report in headless Chromium: the script ran and
#                                       wired the expected number of heatmaps, no console errors, the
#                                       screenshot is not blank (kept as html-report-screenshot.png
#                                       next to the build). Exit 77 (skipped) without chromium.
set -euo pipefail
NAZAR=$1
MODE=${2:-cli}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$MODE" = chromium ]; then
    CHROME=$(command -v chromium || command -v chromium-browser || true)
    [ -n "$CHROME" ] || { echo "chromium not installed (scripts/install-deps.sh test installs it): skipped"; exit 77; }
fi

# A small demo model: trained in seconds, good enough to have peaked attention.
"$NAZAR" demo --steps 150 --train-size 2000 --test-size 40 --hidden-size 32 --embedding-size 16 \
    --out-dir "$tmp" --color never --examples 2 --threads 2 > "$tmp/demo.out"
for f in demo-attention.svg demo-report.html demo.safetensors; do
    [ -s "$tmp/$f" ] || fail "nazar demo did not write $f"
done
grep -q "held-out exact match" "$tmp/demo.out" || fail "demo printed no accuracy"

printf '3 May 1979\n14 juillet 1989\nDonnerstag, 29. Februar 2024\n' > "$tmp/in.txt"

if [ "$MODE" = cli ]; then
    # SVG: well-formed XML; one cell per pair; fill darker (lower luminance) for larger weights
    "$NAZAR" attention --model "$tmp/demo.safetensors" --input "$tmp/in.txt" --svg "$tmp/one.svg" \
        --sentence 2 --html "$tmp/all.html" > "$tmp/plain.out"
    for svg in "$tmp/one.svg" "$tmp/demo-attention.svg"; do
        $PY - "$svg" <<'EOF' || fail "SVG check failed for $svg"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = {"s": "http://www.w3.org/2000/svg"}
rows, cols = int(root.get("data-rows")), int(root.get("data-cols"))
cells = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "cell"]
assert len(cells) == rows * cols, (len(cells), rows, cols)
pairs = {(int(c.get("data-t")), int(c.get("data-i"))) for c in cells}
assert len(pairs) == rows * cols
def lum(h):
    r, g, b = (int(h[k:k + 2], 16) / 255 for k in (1, 3, 5))
    f = lambda v: v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)
ws = sorted((float(c.get("data-w")), lum(c.get("fill"))) for c in cells)
for (w0, l0), (w1, l1) in zip(ws, ws[1:]):
    assert w1 == w0 or l1 <= l0 + 1e-9, (w0, l0, w1, l1)
texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
assert any(t and "attention weight" in t for t in texts)
print(f"{sys.argv[1]}: {rows}x{cols} cells ok")
EOF
    done
    grep -q "juillet" "$tmp/one.svg" || fail "--sentence 2 did not pick the second sentence"
    [ "$(grep -c '<svg ' "$tmp/all.html")" = 3 ] || fail "HTML report does not have 3 heatmaps"
    if grep -q $'\x1b' "$tmp/plain.out"; then fail "ANSI escapes written to a pipe"; fi
    "$NAZAR" attention --model "$tmp/demo.safetensors" --input "$tmp/in.txt" --color always > "$tmp/color.out"
    grep -q $'\x1b\[48;2;' "$tmp/color.out" || fail "--color always wrote no colours"
    # a TTY gets colours, unless NO_COLOR is set (script(1) provides the pseudo-terminal)
    if command -v script > /dev/null; then
        script -qec "'$NAZAR' attention --model '$tmp/demo.safetensors' --input '$tmp/in.txt'" /dev/null > "$tmp/tty.out"
        grep -q $'\x1b\[48;2;' "$tmp/tty.out" || fail "no colours on a TTY"
        NO_COLOR=1 script -qec "'$NAZAR' attention --model '$tmp/demo.safetensors' --input '$tmp/in.txt'" /dev/null > "$tmp/nocolor.out"
        if grep -q $'\x1b\[48;2;' "$tmp/nocolor.out"; then fail "colours despite NO_COLOR"; fi
    fi
    # stdin works too
    echo "1 janvier 2000" | "$NAZAR" attention --model "$tmp/demo.safetensors" | grep -q "1 janvier 2000 ->" ||
        fail "stdin input"
    # usage errors: one line, exit 2
    set +e
    "$NAZAR" attention --model "$tmp/demo.safetensors" --input "$tmp/in.txt" --svg "$tmp/x.svg" --sentence 9 \
        > /dev/null 2> "$tmp/err"; rc=$?
    set -e
    [ $rc = 2 ] || fail "--sentence 9 of 3: exit $rc, expected 2"
    grep -q "1..3" "$tmp/err" || fail "error does not name the range: $(cat "$tmp/err")"
    set +e
    "$NAZAR" attention --model "$tmp/demo.safetensors" --input /nonexistent/file > /dev/null 2>&1; rc=$?
    "$NAZAR" demo --attention luong --steps 1 --out-dir "$tmp" > /dev/null 2>&1; rc2=$?
    set -e
    [ $rc = 2 ] || fail "missing --input file: exit $rc, expected 2"
    [ $rc2 = 2 ] || fail "demo --attention luong: exit $rc2, expected 2"
    echo "attention CLI ok"
    exit 0
fi

# ---- chromium ----
"$NAZAR" attention --model "$tmp/demo.safetensors" --input "$tmp/in.txt" --html "$tmp/report.html" --no-terminal
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir="$tmp/profile")
for page in report.html demo-report.html; do
    expected=$(grep -o 'data-expected="[0-9]*"' "$tmp/$page" | grep -o '[0-9]*')
    timeout 120 "$CHROME" "${flags[@]}" --virtual-time-budget=3000 --dump-dom "file://$tmp/$page" \
        > "$tmp/dom.html" 2> "$tmp/dom.err" || fail "chromium --dump-dom failed: $(tail -5 "$tmp/dom.err")"
    grep -q "data-heatmaps=\"$expected\"" "$tmp/dom.html" || fail "$page: script did not wire $expected heatmaps"
    if grep -q 'data-errors=' "$tmp/dom.html"; then fail "$page: script errors"; fi
    timeout 120 "$CHROME" "${flags[@]}" --enable-logging=stderr --v=0 --window-size=1200,1400 --virtual-time-budget=3000 \
        --hide-scrollbars --screenshot="$tmp/shot.png" "file://$tmp/$page" > /dev/null 2> "$tmp/shot.err" ||
        fail "chromium --screenshot failed: $(tail -5 "$tmp/shot.err")"
    if grep -E 'CONSOLE|Uncaught' "$tmp/shot.err" | grep -qiE 'error|uncaught'; then
        fail "$page: console errors: $(grep -E 'CONSOLE|Uncaught' "$tmp/shot.err")"
    fi
    $PY - "$tmp/shot.png" <<'EOF' || fail "$page: blank screenshot"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w, h = 8, b"", 0, 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR": w, h = struct.unpack(">II", body[:8])
    if kind == b"IDAT": idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw))
assert w >= 800 and h >= 800, (w, h)
assert distinct > 40, f"only {distinct} distinct byte values: blank"
print(f"screenshot {w}x{h}, {distinct} distinct byte values")
EOF
    [ -n "${NAZAR_SCREENSHOT_DIR:-}" ] && cp "$tmp/shot.png" "$NAZAR_SCREENSHOT_DIR/html-report-${page%.html}.png"
done
echo "HTML report ok in $($CHROME --version 2>/dev/null || echo chromium)"
