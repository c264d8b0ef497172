# Quick start (README): `make test` builds and runs every test; `make report` arrives with the
# reports issue. Both install the Debian packages that are missing first (scripts/install-deps.sh).

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PEV_WERROR ?= OFF

.PHONY: all deps configure build test test-exhaustive format check-format install clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DPEV_WERROR=$(PEV_WERROR) $(CMAKE_FLAGS)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The default run leaves out the `exhaustive` label (multi-minute sweeps); `make test-exhaustive`
# runs them.
CTEST_FLAGS ?= -LE exhaustive

test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

test-exhaustive: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -L exhaustive

format:
	@scripts/check-format.sh --fix

check-format: deps
	@scripts/check-format.sh

install: build
	@cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	@rm -rf $(BUILD_DIR)
