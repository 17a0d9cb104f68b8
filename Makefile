# The two set-up commands (README): `make demo` and `make test`. Both install what is missing
# (scripts/install-deps.sh, Debian packages only), configure, build and run.
BUILD  ?= build
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=

.PHONY: all deps deps-build build test demo bench explain clean format

all: build

deps:
	@scripts/install-deps.sh all

deps-build:
	@scripts/install-deps.sh build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

demo: build
	$(BUILD)/nazar explain

bench: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	@for b in $(BUILD)/bench/bench_*; do [ -x "$$b" ] && "$$b" --benchmark_min_time=0.2 || exit 1; done

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp')
