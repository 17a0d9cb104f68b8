#!/usr/bin/env bash
# The Debian package (cmake/package.cmake, `make package`), used as an installed copy: it is made
# with cpack into a temporary directory (or NAZAR_DEB names one already made), unpacked with
# dpkg-deb -x into a temporary root, and from there, outside the build tree: nazar --version,
# a tiny train + translate, the man pages and completions, and `import nazar` from the package's
# dist-packages. Skipped (77) without dpkg-deb or cpack.
# Usage: test_package.sh path/to/nazar BUILD_DIR [CPACK]
BUILD=$(cd "${2:?usage: test_package.sh NAZAR BUILD_DIR [CPACK]}" && pwd) || exit 1
. "$(dirname "$0")/lib.sh" "$@"
CPACK=${3:-cpack}
command -v dpkg-deb > /dev/null || { echo "skipped: dpkg-deb is missing (Debian's dpkg)"; exit 77; }

deb=${NAZAR_DEB:-}
if [[ -z $deb ]]; then
    command -v "$CPACK" > /dev/null || { echo "skipped: no cpack to make the package"; exit 77; }
    "$CPACK" -G DEB --config "$BUILD/CPackConfig.cmake" -B "$dir/pkg" > cpack.log 2>&1 \
        || { bad "cpack -G DEB" "$(tail -20 cpack.log)"; exit 1; }
    deb=$(ls "$dir"/pkg/nazar_*.deb 2> /dev/null | head -1)
    [[ -n $deb ]] || { bad "cpack made no nazar_*.deb" "$(tail -5 cpack.log)"; exit 1; }
fi
ok "package $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
depends=$(dpkg-deb -f "$deb" Depends)
echo "     Depends: $depends"
root=$dir/root
dpkg-deb -x "$deb" "$root" || { bad "dpkg-deb -x"; exit 1; }

# What the package holds, where Debian's tools look for it (libraries in the multiarch folder).
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || gcc -print-multiarch)
for f in usr/bin/nazar usr/share/man/man1/nazar.1.gz usr/share/man/man1/nazar-train.1.gz \
    usr/share/bash-completion/completions/nazar usr/share/zsh/vendor-completions/_nazar \
    usr/share/doc/nazar/README.md usr/share/nazar/configs/tiny.yaml \
    usr/include/nazar/decode/translator.h usr/lib/$multiarch/cmake/nazar/nazarConfig.cmake; do
    [[ -e $root/$f ]] || bad "/$f is not in the package"
done
py_pkg=$root/usr/lib/python3/dist-packages
# oneDNN is opened at run time, not linked (nazar/core/gemm/onednn_api.h): dpkg-shlibdeps cannot
# see it, so the package must name it itself.
if grep -q 'GEMM library: oneDNN' <("$NAZAR" --version 2>&1); then
    grep -q libdnnl <<< "$depends" || bad "Depends lacks oneDNN (libdnnl)" "$depends"
fi
if [[ -d $py_pkg/nazar ]]; then
    grep -q python3-numpy <<< "$depends" || bad "Depends lacks python3-numpy" "$depends"
fi
[[ $fail -eq 0 ]] && ok "program, library, headers, CMake package, man pages, completions, docs, configs"

# The packaged program, run from the unpacked root (no build tree on any path).
nz=$root/usr/bin/nazar
"$nz" --version > version.txt 2>&1 || bad "nazar --version" "$(cat version.txt)"
grep -qE '^nazar [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]+(-dirty)?|unknown)\)' version.txt \
    && grep -q '^GEMM library: ' version.txt && ok "$(head -1 version.txt)" \
    || bad "nazar --version" "$(cat version.txt)"
for i in $(seq 1 40); do echo "a b c $((i % 7))	c b a $((i % 7))"; done > train.tsv
"$nz" train --train train.tsv --tokenizer word --embedding-size 8 --hidden-size 8 \
    --batch-size 8 --max-steps 2 --threads 1 --save-dir model > train.log 2>&1 \
    || bad "nazar train from the package" "$(tail -5 train.log)"
printf 'a b c 1\nc c 3\n' | "$nz" translate --model model/model.safetensors > out.txt 2> translate.err \
    && [[ $(wc -l < out.txt) -eq 2 ]] && ok "train + translate with the packaged nazar" \
    || bad "nazar translate from the package" "$(cat translate.err)"

if [[ -d $py_pkg/nazar ]]; then
    PYTHONPATH=$py_pkg PYTHONDONTWRITEBYTECODE=1 $PY -c '
import sys, nazar
assert nazar.__file__.startswith(sys.argv[1]), nazar.__file__
out = nazar.Translator(sys.argv[2]).translate(["a b c 1"])
print(nazar.__file__, "->", repr(out[0].text))' "$py_pkg" model/model.safetensors > py.log 2>&1 \
        && ok "import nazar from the package: $(cat py.log)" || bad "import nazar" "$(cat py.log)"
else
    echo "skip import nazar: the package has no Python module (built without pybind11)"
fi
exit $fail
