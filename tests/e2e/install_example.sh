#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then build examples/ (a separate project using
# find_package(nazar)) against it, train a tiny model for two steps with the INSTALLED nazar, and
# run the example (two concurrent Translator calls, 2-best lists with alignments) on it.
# Also: only public headers are installed (none of the internal kernel headers, nothing of apps/),
# together they compile, and translator.h (the application API) pulls in at most 5 other nazar
# headers (26 before the public API was cut down to what applications need).
# Usage: install_example.sh BUILD_DIR SOURCE_DIR [CMAKE [CXX]]
set -eu
BUILD=${1:?usage: install_example.sh BUILD_DIR SOURCE_DIR [CMAKE [CXX]]}
SRC=${2:?usage: install_example.sh BUILD_DIR SOURCE_DIR [CMAKE [CXX]]}
CMAKE=${3:-cmake}
CXX=${4:-c++}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$CMAKE" --install "$BUILD" --prefix "$dir/prefix" > "$dir/install.log" || { cat "$dir/install.log"; exit 1; }
arch=$("$CXX" -print-multiarch 2> /dev/null || true)  # Debian's triplet: the libraries' folder
for f in bin/nazar include/nazar/decode/translator.h include/nazar/core/tensor.h \
    lib${arch:+/$arch}/cmake/nazar/nazarConfig.cmake; do
    [[ -e "$dir/prefix/$f" ]] || { echo "FAIL: $f not installed"; exit 1; }
done
echo "ok   installed into a temporary prefix"

# Public headers only: internals (kernels, SIMD helpers, the naive oracle) and apps/ stay out.
for f in include/nazar/core/kernels.h include/nazar/core/gemm include/nazar/core/simd.h include/nazar/attention/vec.h \
         include/nazar/attention/naive.h include/apps include/nazar/demo; do
    [[ ! -e "$dir/prefix/$f" ]] || { echo "FAIL: internal $f was installed"; exit 1; }
done
(cd "$dir/prefix/include" && find nazar -name '*.h' | sort | sed 's/.*/#include "&"/') > "$dir/all.cpp"
n=$(wc -l < "$dir/all.cpp")
"$CXX" -std=c++20 -fsyntax-only -I"$dir/prefix/include" "$dir/all.cpp" > "$dir/all.log" 2>&1 \
    || { echo "FAIL: the $n installed headers do not compile together"; cat "$dir/all.log"; exit 1; }
echo '#include "nazar/decode/translator.h"' > "$dir/tr.cpp"
"$CXX" -std=c++20 -fsyntax-only -H -I"$dir/prefix/include" "$dir/tr.cpp" 2> "$dir/tr.log" \
    || { cat "$dir/tr.log"; exit 1; }
k=$(( $(grep -c '/nazar/' "$dir/tr.log" || true) - 1 ))  # -H lists translator.h itself first
if [[ $k -gt 5 ]]; then
    echo "FAIL: translator.h includes $k other nazar headers (at most 5):"; grep '/nazar/' "$dir/tr.log"; exit 1
fi
echo "ok   $n public headers installed, they compile; translator.h pulls in $k other nazar headers"

gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
"$CMAKE" -S "$SRC/examples" -B "$dir/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$dir/prefix" > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
"$CMAKE" --build "$dir/build" > "$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }
echo "ok   examples/ builds against find_package(nazar)"

cd "$dir"
for i in $(seq 1 40); do echo "a b c $((i % 7))	c b a $((i % 7))"; done > train.tsv
cat > run.yaml <<'YAML'
data:
  train: train.tsv
  batch_size: 8
model:
  embedding_size: 8
  hidden_size: 8
training:
  max_steps: 2
  save_dir: model
  threads: 1
YAML
"$dir/prefix/bin/nazar" train --config run.yaml > train.log 2>&1 || { cat train.log; exit 1; }
"$dir/build/translate_example" model/model.safetensors "a b c 1" "c c 3" > example.out 2> example.err \
    || { cat example.out example.err; exit 1; }
if [[ $(grep -c '^  [12]\. ' example.out) -eq 4 ]]; then
    echo "ok   the example translates with the installed library"
else
    echo "FAIL: unexpected example output"; cat example.out example.err; exit 1
fi
