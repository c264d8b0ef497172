# Quick start (README): `make report` builds pev and writes the precision-drift report of the
# default suite; `make test` builds and runs every test. Both install the Debian packages that are
# missing first (scripts/install-deps.sh; `make test` adds the test-only ones with --test).

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PEV_WERROR ?= OFF
PEV_SANITIZE ?= OFF
FUZZ_SECONDS ?= 600

.PHONY: all deps deps-test configure build test test-exhaustive test-sanitize fuzz report format check-format \
  install clean

all: build

deps:
	@scripts/install-deps.sh

# Test-only packages (python3-torch for tests/corpus, chromium): `make report` does not need them.
deps-test:
	@scripts/install-deps.sh --test

CONFIGURE = cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DPEV_WERROR=$(PEV_WERROR) \
  -DPEV_SANITIZE=$(PEV_SANITIZE) $(CMAKE_FLAGS)

configure: deps
	@$(CONFIGURE)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The default run leaves out the `exhaustive` label (multi-minute sweeps); `make test-exhaustive`
# runs them.
CTEST_FLAGS ?= -LE exhaustive

test: deps-test build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

test-exhaustive: deps-test build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -L exhaustive

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (its own build directory,
# -O1 with line tables; benchmarks and the `exhaustive` binaries are not built; the find_package
# consumer check, which links an uninstrumented project against the installed libraries, is left to
# the normal build; so is the real-engine corpus, 3 minutes under the sanitizers, whose pev runs read
# files the fuzz targets cover). The same tests on smaller sizes, each printed by its test: the
# property suites run SANITIZE_PROP_CASES cases per property (PEV_PROP_CASES; the normal run: 100)
# and the fast reference's position sweep stops at SANITIZE_FAST_POSITIONS (PEV_FAST_POSITIONS;
# the normal run: 4096). In CI.
SANITIZE_PROP_CASES ?= 25
SANITIZE_FAST_POSITIONS ?= 1024

test-sanitize:
	@PEV_PROP_CASES=$(SANITIZE_PROP_CASES) PEV_FAST_POSITIONS=$(SANITIZE_FAST_POSITIONS) \
	  $(MAKE) --no-print-directory test PEV_SANITIZE=ON BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo \
	  CMAKE_FLAGS="-DPEV_BUILD_BENCHMARKS=OFF -DPEV_BUILD_EXHAUSTIVE_TESTS=OFF $(CMAKE_FLAGS)" \
	  CTEST_FLAGS="-LE 'exhaustive|install|corpus'"

# libFuzzer targets (clang, ASan + UBSan), FUZZ_SECONDS per target (default 600: the long run).
fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# The default suite's report (pev report, docs/design.md §5.1) into REPORT_DIR: configures and
# builds only the tool with their output in REPORT_LOG (printed only when they fail), then prints
# pev's own output, the report's table and where the report is, and exits with pev's status (0: all
# pass, 1: a check failed; 2: the build failed).
REPORT_DIR ?= pev-report
REPORT_FLAGS ?=
REPORT_LOG ?= $(BUILD_DIR)/make-report.log

report: deps
	@mkdir -p $(BUILD_DIR); \
	if ! { $(CONFIGURE) && cmake --build $(BUILD_DIR) -j $(JOBS) --target pev; } \
	    >$(REPORT_LOG) 2>&1; then \
	  cat $(REPORT_LOG); echo "pev: building pev failed (the log above: $(REPORT_LOG))" >&2; exit 2; \
	fi
	@echo "pev: running the default suite (pev report --out $(REPORT_DIR) $(REPORT_FLAGS))"
	@start=$$(date +%s); \
	$(BUILD_DIR)/verify/pev report --out $(REPORT_DIR) $(REPORT_FLAGS); status=$$?; \
	end=$$(date +%s); \
	if [ -f $(REPORT_DIR)/summary.md ]; then echo; cat $(REPORT_DIR)/summary.md; echo; fi; \
	echo "pev: report written to $(REPORT_DIR)/index.html (summary.md, report.json, junit.xml, plots/, data/) in $$((end - start)) s"; \
	exit $$status

format:
	@scripts/check-format.sh --fix

check-format: deps
	@scripts/check-format.sh

install: build
	@cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	@rm -rf $(BUILD_DIR)
