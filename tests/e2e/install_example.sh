#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then build examples/ (a separate project using
# find_package(nazar)) against it, train a tiny model for two steps with the INSTALLED nazar, and
# run the example (two concurrent Translator calls, 2-best lists with alignments) on it.
# Usage: install_example.sh BUILD_DIR SOURCE_DIR [CMAKE]
set -eu
BUILD=${1:?usage: install_example.sh BUILD_DIR SOURCE_DIR [CMAKE]}
SRC=${2:?usage: install_example.sh BUILD_DIR SOURCE_DIR [CMAKE]}
CMAKE=${3:-cmake}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$CMAKE" --install "$BUILD" --prefix "$dir/prefix" > "$dir/install.log" || { cat "$dir/install.log"; exit 1; }
for f in bin/nazar include/nazar/decode/translator.h include/nazar/core/tensor.h lib/cmake/nazar/nazarConfig.cmake; do
    [[ -e "$dir/prefix/$f" ]] || { echo "FAIL: $f not installed"; exit 1; }
done
echo "ok   installed into a temporary prefix"

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
