# Quick start (README): `make test` builds and runs every test; `make report` arrives with the
# reports issue. Both install the Debian packages that are missing first (scripts/install-deps.sh).

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PEV_WERROR ?= OFF
PEV_SANITIZE ?= OFF
FUZZ_SECONDS ?= 600

.PHONY: all deps configure build test test-exhaustive test-sanitize fuzz format check-format install clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DPEV_WERROR=$(PEV_WERROR) \
	  -DPEV_SANITIZE=$(PEV_SANITIZE) $(CMAKE_FLAGS)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The default run leaves out the `exhaustive` label (multi-minute sweeps); `make test-exhaustive`
# runs them.
CTEST_FLAGS ?= -LE exhaustive

test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

test-exhaustive: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -L exhaustive

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (its own build directory;
# benchmarks are not built; the find_package consumer check, which links an uninstrumented project
# against the installed libraries, is left to the normal build). CI runs it after `make test`.
test-sanitize:
	@$(MAKE) --no-print-directory test PEV_SANITIZE=ON BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo \
	  CMAKE_FLAGS="-DPEV_BUILD_BENCHMARKS=OFF $(CMAKE_FLAGS)" CTEST_FLAGS="-LE 'exhaustive|install'"

# libFuzzer targets (clang, ASan + UBSan), FUZZ_SECONDS per target (default 600: the long run).
fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

format:
	@scripts/check-format.sh --fix

check-format: deps
	@scripts/check-format.sh

install: build
	@cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	@rm -rf $(BUILD_DIR)
