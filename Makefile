# tablekit's commands. `make test` is what CI runs; `make demo` shows the
# examples on tablekit's emulator (Go alone), `make demo TARGET=azurite` on
# a fresh Azurite. `make test` installs the pinned Azurite first: the
# conformance suite, the harness's tests, the examples and the differential
# tests run on Azurite too. It installs the pinned Azure SDK for JavaScript
# as well, for the JS SDK interop test (emulator/jsinterop_test.go).

GO            ?= go
AZURITE_DIR   := integration/azurite/_npm
AZURITE       := $(AZURITE_DIR)/node_modules/.bin/azurite
JSINTEROP_DIR := emulator/_jsinterop
# npm ci writes node_modules/.package-lock.json last, with a fresh time.
JSINTEROP     := $(JSINTEROP_DIR)/node_modules/.package-lock.json
BENCH_COUNT   ?= 6
FUZZTIME      ?= 60s
TARGET        ?= emulator

.PHONY: test $(TEST_RUNS) demo bench azurite azurite-install jsinterop-install vet fuzz

# npm ci installs exactly what package-lock.json pins (Azurite 3.37.0).
$(AZURITE): $(AZURITE_DIR)/package.json $(AZURITE_DIR)/package-lock.json
	npm ci --prefix $(AZURITE_DIR) --no-audit --no-fund --loglevel=error
	@test -x $(AZURITE)

azurite-install: $(AZURITE)

# npm ci installs exactly the Azure SDK for JavaScript that package-lock.json
# pins (data-tables 13.3.2, storage-queue 12.32.0, storage-blob 12.34.0).
$(JSINTEROP): $(JSINTEROP_DIR)/package.json $(JSINTEROP_DIR)/package-lock.json
	npm ci --prefix $(JSINTEROP_DIR) --no-audit --no-fund --loglevel=error
	@test -f $(JSINTEROP)

jsinterop-install: $(JSINTEROP)

vet:
	$(GO) vet ./...

# Every test once, on the emulator (the default target of tools/testenv;
# the harness's own tests and the differential tests start Azurite), then
# the conformance suite and every Example on Azurite as well. The race
# detector runs on every package, except on the long storage tests of
# patterns and tablecopy named in RACE_SKIP: under -race, one after the
# other, patterns' nine longest ran 244 s of the package's 367
# (2026-11-27, this 2-core machine), and the exactness tests under early
# ends (Test*WhenPagesEndEarly) made tablecopy's run 167 s. What they
# exercise concurrently runs under -race elsewhere (each repository's
# concurrent writers in the conformance run on Azurite; the scan, bulk
# writes, rebuilds, copies and the worker in the tests left in).
# cmd/tablekit's tests run without it: the commands they start are built
# with -race, and they do the work. Tests run 8 at once (-parallel 8): most
# of the fault tests wait in azcore's retry delays, not on a CPU. The five
# runs go one after the other: run at once (make -j), they starved the
# Azurites they start of CPU, which then missed their 30 s to start.
RACE_SKIP  := ^(TestConformance|TestConformanceLostRefusal|TestSDKPath|TestRebuildVerifyRepairUnderFaults|TestWritesUnderFaultsEndExact|TestAmbiguityCheckDoesNotHideRealConflicts|TestIndexMaintenanceUnderFaults|TestUpdateOutcomeKnownUnderFaults|TestDenormalizationQueryConformance|Test.*WhenPagesEndEarly)$$
TEST_FLAGS := -count=1 -parallel 8 -timeout 15m
TEST_RUNS  := test-race test-race-patterns test-patterns test-cmd test-azurite
# The storage tests' emulator runs in a process of its own, built without
# -race (tools/testenv, TABLEKIT_TEST_EMULATOR): in a test binary built
# with -race it is instrumented too (patterns' three longest tests: 179 s
# of CPU in process, 147 s with the emulator's own process counted). The
# emulator's own packages test it under -race, in process.
EMULATOR_BIN := $(CURDIR)/bin/tablekit

test: $(AZURITE) $(JSINTEROP) vet
	$(GO) build -o $(EMULATOR_BIN) ./cmd/tablekit
	@TABLEKIT_TEST_EMULATOR=$(EMULATOR_BIN) $(MAKE) --no-print-directory $(TEST_RUNS)

test-race:
	$(GO) test -race $(TEST_FLAGS) $$($(GO) list ./... | grep -v -e '/patterns$$' -e '/tablecopy$$' -e '/cmd/tablekit$$')

test-race-patterns:
	$(GO) test -race $(TEST_FLAGS) -skip '$(RACE_SKIP)' ./patterns/ ./tablecopy/

test-patterns:
	$(GO) test $(TEST_FLAGS) -run '$(RACE_SKIP)' ./patterns/ ./tablecopy/

test-cmd:
	$(GO) test $(TEST_FLAGS) ./cmd/tablekit/

# The conformance suite and the Examples on Azurite, one test at a time:
# two conformance tests at once on one Azurite took 214 s, one after the
# other 135 s.
test-azurite:
	TABLEKIT_TEST_TARGET=azurite $(GO) test -race -count=1 -parallel 1 -timeout 15m -run '^(TestConformance.*|Example.*)$$' ./patterns/ ./consistency/ ./examples/...

demo: $(if $(filter azurite,$(TARGET)),$(AZURITE))
	$(GO) run ./tools/demo -target $(TARGET)

# Every benchmark of the project, BENCH_COUNT rounds each (the storage ones on
# an Azurite the benchmark binary starts itself): the sides of a comparison
# alternate round by round (TABLEKIT_BENCH_ROUNDS), then one table of medians
# and ratios tablekit / reference, and tablekit / ceiling, paired by round.
# Raw output is kept in bench.out.
# The client benchmarks run on Azurite (TABLEKIT_TEST_TARGET=azurite): in
# its own process, so the benchmark process's CPU is the client's alone;
# the emulator's benchmarks (emulator) start both services
# themselves. The whole-table benchmarks on the scale model (1,000,000
# entities, minutes a round) run one round (TABLEKIT_BENCH_LONG_ROUNDS).
bench: $(AZURITE)
	TABLEKIT_TEST_TARGET=azurite TABLEKIT_TEST_STRICT=0 TABLEKIT_BENCH_ROUNDS=$(BENCH_COUNT) $(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 180m ./... | tee bench.out
	@echo
	@$(GO) run ./tools/benchreport < bench.out

# One Azurite in the foreground on the default ports, for manual use.
azurite: $(AZURITE)
	$(AZURITE) --inMemoryPersistence --skipApiVersionCheck --disableTelemetry \
		--blobHost 127.0.0.1 --queueHost 127.0.0.1 --tableHost 127.0.0.1

# Every fuzz target of the project (found by grepping for `func Fuzz` in
# *_test.go), each for FUZZTIME, one after the other; stops at the first
# crash, which go test saves under the package's testdata/fuzz/ (commit it:
# `go test` then replays it as a regression test). `go test` (make test)
# already runs each target's seed corpus as a smoke test; a short real run
# is `make fuzz FUZZTIME=5s`.
fuzz:
	@targets=$$(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | grep -v '/node_modules/' | sed 's/:func /:/' | sort); \
	test -n "$$targets" || { echo "no fuzz targets found"; exit 1; }; \
	for t in $$targets; do \
		dir=$$(dirname $${t%%:*}); name=$${t##*:}; \
		echo "== $$dir $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$dir || exit 1; \
	done
