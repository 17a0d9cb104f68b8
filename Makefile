# The two set-up commands (README): `make demo` and `make test`. Both install what is missing
# (scripts/install-deps.sh, Debian packages only), configure, build and run. `make check` is the
# fast lane: the same Release build, then only the unit, gradcheck, parity and lint tests.
BUILD  ?= build
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
# reliability: SANITIZE=0 = make test without the ASan/UBSan suite and the fuzzers;
# FUZZ_SECONDS = time per fuzz target in make test (seconds of a core: scripts/run-fuzzers.sh);
# SANITIZE_CXX = the instrumented build's compiler: clang++-14 (default) builds the sanitizer
# suite and the fuzz targets in one directory, g++ builds the suite with gcc and the fuzzers
# separately with clang (two instrumented builds: scripts/configure-instrumented.sh,
# docs/reliability.md).
SANITIZE ?= 1
FUZZ_SECONDS ?= 30
SANITIZE_CXX ?= clang++-14
export SANITIZE_CXX

.PHONY: all deps deps-build build test check demo demo-measure bench bench-compare explain clean format sanitize fuzz package wheel

all: build

deps:
	@scripts/install-deps.sh all

deps-build:
	@scripts/install-deps.sh build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Each phase prints its wall and CPU time (scripts/timed.sh; the instrumented scripts time theirs).
TIMED = $(CURDIR)/scripts/timed.sh
test: deps $(BUILD)/build.ninja
	$(TIMED) "release build" cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && $(TIMED) "release ctest" ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)
ifneq ($(SANITIZE),0)
	@# reliability (docs/reliability.md): the suite again under ASan+UBSan, then every fuzzer
	@# for FUZZ_SECONDS from its seeds. `make test SANITIZE=0` skips both.
	JOBS=$(JOBS) RELEASE_BUILD=$(BUILD) scripts/run-sanitizers.sh
	JOBS=$(JOBS) FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzzers.sh
endif

# The fast lane (a couple of minutes once built): unit, gradcheck and parity tests (C++ against
# the committed fixtures, and the PyTorch-driven scripts) and the format check; not the
# end-to-end tests (label e2e), the sanitizers or the fuzzers. CHECK_LABELS overrides the selection (a ctest -L regex).
CHECK_LABELS ?= ^(unit|grad|parity|lint)$$
check: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L '$(CHECK_LABELS)' -LE '^e2e$$' $(CTEST_FLAGS)

# The Debian package (cmake/package.cmake): the program, library, headers, CMake package, Python
# module, man pages, completions, docs and configs, built without the tests and benchmarks, into
# $(BUILD)/package/nazar_<version>_<arch>.deb. Install it with: apt install ./$(BUILD)/package/nazar_*.deb
package: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target nazar_package_contents
	cd $(BUILD) && cpack -G DEB -B package
	@ls -l $(BUILD)/package/*.deb

# The Python wheel (docs/python.md): pip wheel with Debian's setuptools and wheel, offline, the
# extension from this build, into $(BUILD)/wheel/nazar-<version>-cp311-cp311-linux_<arch>.whl.
# Install it into a virtual environment made with --system-site-packages (numpy from Debian).
wheel: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target _nazar
	NAZAR_CMAKE_BUILD_DIR=$(abspath $(BUILD)) /usr/bin/python3 -m pip wheel -q --no-build-isolation \
		--no-index --no-deps -w $(BUILD)/wheel .
	@ls $(BUILD)/wheel/nazar-*.whl

# The demo (nazar demo): trains the built-in dates task (~2 min on 2 cores), prints accuracy,
# translations and a heatmap, writes demo-attention.svg, demo-report.html and demo.safetensors
# into $(BUILD)/demo/ (not the source tree).
# Only the nazar program is built first (not the tests and benchmarks), so a newcomer waits
# for the compiler once and then for about two minutes of training.
DEMO_FLAGS ?=
demo: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target nazar_cli
	$(BUILD)/nazar demo --out-dir $(BUILD)/demo $(DEMO_FLAGS)

# demo-measure: the demo's held-out accuracy and wall time, with the load average of the
# machine before and after (timings on a shared machine are only comparable with it).
demo-measure: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target nazar_cli
	@echo "load average before: $$(cut -d' ' -f1-3 /proc/loadavg), $$(nproc) cores"
	@start=$$(date +%s.%N); $(BUILD)/nazar demo --color never --out-dir $(BUILD)/demo-measure $(DEMO_FLAGS) \
	  | tee $(BUILD)/demo-measure.log | grep -E '^(trained|held-out|alignment|total)'; \
	 end=$$(date +%s.%N); awk -v a=$$start -v b=$$end 'BEGIN { printf "wall time: %.1f s\n", b - a }'
	@echo "load average after: $$(cut -d' ' -f1-3 /proc/loadavg)"

bench: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	@for b in $(BUILD)/bench/bench_*; do [ -x "$$b" ] && "$$b" --benchmark_min_time=0.2 || exit 1; done

# nazar vs PyTorch and vs the sgemm peak, one table (docs/performance.md).
# BENCH_FLAGS=--quick: about 5 minutes; --kernels env keeps OPENBLAS_CORETYPE as set.
BENCH_FLAGS ?=
bench-compare: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target nazar_cli
	/usr/bin/python3 bench/compare/run.py --nazar $(BUILD)/nazar $(BENCH_FLAGS)

# OpenBLAS vs oneDNN sgemm on the model's shapes (docs/performance.md). Needs Debian's
# libdnnl-dev (nazar's default GEMM backend, chosen for its dispatch by CPU features). Unsets
# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for itself (the core that ran is printed); KERNELS=env
# keeps them.
KERNELS ?= auto
.PHONY: blas-backends
blas-backends: deps-build
	@test -f /usr/include/oneapi/dnnl/dnnl.h || { echo "blas-backends needs libdnnl-dev (scripts/install-deps.sh installs it)"; exit 1; }
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target blas_backends
	$(if $(filter env,$(KERNELS)),,env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE) OMP_NUM_THREADS=1 $(BUILD)/bench/blas_backends

# arm64 (docs/arm64.md): cross-built with Debian's aarch64-linux-gnu-g++ against Debian's arm64
# libraries (scripts/install-deps.sh arm64), tests run under qemu-user (the toolchain file makes
# ctest go through qemu-aarch64). The portable kernels only (no x86 SIMD, no NEON of nazar's own),
# OpenBLAS for the GEMMs (oneDNN's arm64 -dev package cannot be co-installed with the amd64
# one), no MPI, Python module or benchmarks.
#   test-arm64     the program (ARM64_BUILD/nazar) and the unit, gradcheck and C++ parity tests
#   test-arm64-ci  the bounded subset for CI: the kernel, layer, gradcheck and parity tests of
#                  core, nn and attention (tests/cross_subset.cmake), one program, no CLI
ARM64_BUILD ?= build-arm64
ARM64_CMAKE_FLAGS ?=
ARM64_LABELS ?= ^(unit|grad|parity)$$
.PHONY: deps-arm64 test-arm64 test-arm64-ci
deps-arm64:
	@scripts/install-deps.sh arm64

$(ARM64_BUILD)/build.ninja:
	cmake -S . -B $(ARM64_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchain-aarch64.cmake -DNAZAR_BLAS=OpenBLAS \
		-DNAZAR_MPI=OFF -DNAZAR_PYTHON=OFF -DNAZAR_BUILD_BENCH=OFF $(ARM64_CMAKE_FLAGS)

test-arm64: deps-arm64 $(ARM64_BUILD)/build.ninja
	$(TIMED) "arm64 build" cmake --build $(ARM64_BUILD) -j $(JOBS) \
		--target nazar_cli nazar_unit_tests nazar_grad_tests nazar_parity_tests
	@if command -v file >/dev/null; then file $(ARM64_BUILD)/nazar; fi
	cd $(ARM64_BUILD) && $(TIMED) "arm64 ctest" ctest --output-on-failure -j $(JOBS) \
		-L '$(ARM64_LABELS)' -LE '^e2e$$' $(CTEST_FLAGS)

test-arm64-ci: deps-arm64 $(ARM64_BUILD)/build.ninja
	$(TIMED) "arm64-ci build" cmake --build $(ARM64_BUILD) -j $(JOBS) --target nazar_cross_subset_tests
	@if command -v file >/dev/null; then file $(ARM64_BUILD)/tests/nazar_cross_subset_tests; fi
	cd $(ARM64_BUILD) && $(TIMED) "arm64-ci ctest" ctest --output-on-failure -j $(JOBS) \
		-L '^cross-subset$$' $(CTEST_FLAGS)

# reliability (docs/reliability.md): the ASan+UBSan suite alone; the fuzzers alone.
sanitize: deps
	JOBS=$(JOBS) scripts/run-sanitizers.sh

fuzz: deps
	JOBS=$(JOBS) FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzzers.sh

# learn-reversal (docs/reversal.md): every attention variant learns sequence reversal (lengths
# 10-50, 24 symbols) to >= 99% exact match; long (minutes per variant), not part of `make test`.
# REVERSAL_VARIANTS: a subset of configs/reversal/*.yaml names; the script's environment
# (STOP_EXACT, MAX_STEPS, THREADS, NICE, ...) passes through.
REVERSAL_VARIANTS ?=
.PHONY: learn-reversal
learn-reversal: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target nazar_cli
	NAZAR=$(BUILD)/nazar OUT=$(BUILD)/learn-reversal experiments/reversal/learn-reversal.sh $(REVERSAL_VARIANTS)

clean:
	rm -rf $(BUILD)

# The tree is formatted with clang-format 14 (scripts/check-format.sh checks it in make test/check).
CLANG_FORMAT ?= $(shell command -v clang-format-14 || echo clang-format)
format:
	$(CLANG_FORMAT) -i $$(git ls-files '*.h' '*.cpp')
