# tablekit's commands, in the order you need them:
#
#   make test               what CI runs: vet, every test (the race detector
#                           on), the tiers that need Node.js switched on, the
#                           conformance suite and the Examples on Azurite too
#   make demo               the examples on tablekit's emulator (Go alone);
#                           make demo TARGET=azurite on a fresh Azurite
#   make bench              every benchmark, then one table of ratios
#   make fuzz               every fuzz target, FUZZTIME each
#   make azurite-install    the pinned Azurite (npm ci), for the azurite tier
#   make jsinterop-install  the pinned Azure SDK for JavaScript, for the js tier
#   make pyinterop-install  the Azure SDK for Python (Debian's python3-azure),
#                           for the python tier
#   make azurite            one Azurite in the foreground, for manual use
#   make images             the emulator's and the worker's OCI images, checked
#
# `go test ./...` alone needs Go only: it runs on the in-process emulator and
# skips the tiers (README, "Testing").

GO        ?= go

# Every go command builds with -trimpath. Without it, Go's build cache
# keys each compiled package by its directory, so a clone at a new path
# compiled the whole module again, warm cache or not: the race run's
# compile took 123.6 s on a fresh clone and 54.6 s when cached (go test
# -race -run '^$$' ./..., 2026-11-28, this 2-core machine, load 1.6-2.9).
# Source file names in binaries are then import paths.
export GOFLAGS := $(strip -trimpath $(GOFLAGS))
TARGET    ?= emulator
BENCH_COUNT ?= 6
FUZZTIME  ?= 60s

AZURITE_DIR   := integration/azurite/_npm
AZURITE       := $(AZURITE_DIR)/node_modules/.bin/azurite
JSINTEROP_DIR := emulator/_jsinterop
# npm ci writes node_modules/.package-lock.json last, with a fresh time.
JSINTEROP     := $(JSINTEROP_DIR)/node_modules/.package-lock.json

.PHONY: test test-setup go-compile-race test-race test-plain test-azurite test-azurite-race test-azurite-plain test-azurite-examples go-checks demo bench fuzz azurite-install jsinterop-install pyinterop-install azurite images

# ---- make test ---------------------------------------------------------------

# The storage tests' emulator runs in a process of its own, built once
# without -race (tools/testenv, TABLEKIT_TEST_EMULATOR): in a test binary
# built with -race it is instrumented too (patterns' three longest tests:
# 179 s of CPU in process, 147 s with the emulator's own process counted).
# The emulator's own packages test it under -race, in process.
EMULATOR_BIN := $(CURDIR)/bin/tablekit
WITHAZURITE  := $(CURDIR)/bin/withazurite

# Every run: every tier on (Azurite and the JS and Python SDKs are installed first),
# the emulator binary above, 16 tests at once (testenv.Main's default, not
# GOMAXPROCS: most of the fault tests wait in azcore's retry delays, not
# on a CPU). The first two runs
# test 4 and 3 packages at once (-p; the default is one per CPU): several
# packages spend their time waiting (the worker's visibility timeouts, the
# consistency worker's delays), and at -p 2 they held a CPU's place. The
# race run took 137 s at -p 4 and 182 s at -p 2, compiled beforehand
# (2026-11-28, this 2-core machine).
# -vet=off: `go vet ./...` has just run every analyzer on every package,
# a superset of the ones go test runs; vetting again in the race run took
# 21 s of CPU (2026-11-28, this machine, load 9-11: go test -race -run '^$$'
# ./... compiled beforehand, 52+21 s CPU with go test's vet, 39+13 without).
#
# GORACE's atexit_sleep_ms: a race-instrumented program sleeps a second
# when it exits (so that a race being reported in another thread is
# printed whole; 10 ms is enough for that), and the race run exits 50 test
# binaries and hundreds of race-built commands (tools/testenv,
# RaceExitSleep, has the figures).
TEST_ENV   := GORACE='atexit_sleep_ms=10 $(GORACE)' TABLEKIT_TEST_TIERS=all TABLEKIT_TEST_EMULATOR=$(EMULATOR_BIN)
TEST_FLAGS := -count=1 -timeout 15m -vet=off

# The race detector runs on every package, in one run. The long storage
# tests of patterns, tablecopy and the commands named in RACE_SKIP run in a
# second run without it (and internal/throttle's simulation of the four
# throttle shapes, one goroutine: 1.7 s alone, 17 s under -race): under
# -race, one after the other, patterns' nine
# longest ran 244 s of the package's 367 (2026-11-27, this 2-core machine),
# and cmd/tablekit took 121 s of CPU under -race, 33 s without, its six
# longest (copies, backups, restores and workers killed and resumed) most
# of it (2026-11-28). What they exercise concurrently runs under -race
# elsewhere (each repository's concurrent writers in the conformance run on
# Azurite below, its modes without faults; the scan, bulk writes, rebuilds, copies and the worker in
# the tests left in). The commands' other tests build the commands they
# start with -race when they run under it (testenv.Command), so the
# commands are checked too.
#
# The tests that measure a pace run in the run without -race, three
# against the emulator's throttle and one against refusals the client's
# faults make: two set their target from how fast their writer
# runs unthrottled, and under -race, beside 15 other tests, that was slow
# enough for TestBulkWriterSharesThePace to take 60 s of the race run's 106 (go test -race -json ./patterns/, the race run's tests, quiet
# machine, 2026-11-29); TestBulkWriteThrottleLowersAndRestoresConcurrency,
# which watches the pace rise back to 5 transactions in flight against
# answers 20 ms late, saw at most 4 in the race run of a make test
# (2026-11-29). Concurrent Writes on one BulkWriter under refusals
# stay under -race (TestBulkWriteThrottledLandsEveryEntityOnce's BulkWriter
# cases, TestBulkWriterConcurrentWrites), and so does a parallel scan
# (TestParallelScanUnderFaults).
RACE_SKIP  := ^(TestPaceMeetsEveryThrottleShape|TestBulkWriterSharesThePace|TestBulkWritePacedByTheThrottle|TestBulkWriteThrottleLowersAndRestoresConcurrency|TestScanThrottledPartitionCompletes|TestConformance|TestConformanceLostRefusal|TestSDKPath|TestRebuildVerifyRepairUnderFaults|TestWritesUnderFaultsEndExact|TestAmbiguityCheckDoesNotHideRealConflicts|TestIndexMaintenanceUnderFaults|TestUpdateOutcomeKnownUnderFaults|TestDenormalizationQueryConformance|TestScanCountDeleteWhereExactWhenPagesEndEarly|TestIndexMaintenanceExactWhenPagesEndEarly|TestCopyBackupRestoreExactWhenPagesEndEarly|TestKilledResumeWhenPagesEndEarly|TestKilledCopyBackupRestoreResume|TestCopyBackupRestoreVerify|TestDistributedJobsSurviveAKilledWorker|TestDistributedCopyOnTheScaleModelSurvivesAKilledWorker|TestDistributedIncrementalBackupToADirectoryAndAFilteredCopy)$$

# go test builds and runs the packages in the order it is given them, and
# ./... is alphabetical: patterns, the longest package, started 174 s into
# the race run and ended it 101 s later (2026-11-28, load 5-11). Named first,
# the longest packages start at once and the short ones fill the end: the
# race run took 180 s instead of 283, its compile cached, the same CPU
# (336 s against 315; load 5 against 5-11). (go test -race -json, the
# packages' Elapsed, the longest first.)
LONGEST_FIRST := ./patterns/ ./emulator/ ./integration/azurite/ ./tablecopy/ ./cmd/tablekit-worker/ \
	./cmd/tablekit/ ./consistency/ ./emulator/internal/blobs/ ./emulator/internal/queues/ ./emulator/internal/tables/

# The Azurite run (test-azurite) runs the conformance suite and every
# Example on Azurite (strict), one test at a time (two conformance tests at
# once on one Azurite took 214 s, one after the other 135 s): under -race
# the modes without faults (rest, sdk), where the repositories' concurrent
# writers run as they do in production; the rest without it. The conformance
# suite on Azurite took 199 s of CPU under -race and 122 s without
# (2026-11-28, this machine).
#
# On Azurite the fault modes run with fast retries only. A fault is made
# in the client's pipeline (tools/faults), so what the service sees under
# azcore's default delays differs only in when the retries come: those
# two modes prove the client's handling of the delays, which they do on
# the emulator in the run above, and on Azurite they took 10 s of the
# last run's 55 (the test binary alone, 2026-11-28, this machine).
AZURITE_ENV   := $(TEST_ENV) TABLEKIT_TEST_TARGET=azurite
AZURITE_FLAGS := -count=1 -parallel 1 -timeout 15m -vet=off
CLEAN_MODES   := ^TestConformance$$/^(rest|sdk)$$
EMULATOR_ONLY := ^TestConformance$$/^(rest|sdk|rest-faults-defaultretry|sdk-faults-defaultretry)$$
#
# The runs go at once (a make of their own with -j, each run's output
# printed whole when it ends): each spends much of its time waiting (azcore's
# retry delays, the worker's visibility timeouts, Azurite answering one
# request at a time), so one after the other they left a CPU idle. The runs
# on the emulator go at a lower priority (nice), so the Azurite run, one
# test at a time and bound by Azurite's answers, is not starved of CPU.
#
# The Azurite run is three go test runs, so they go at once too: one after
# the other they took 100 s and 73 s, the longest of make test's runs
# (2026-11-28, this 2-core machine, load 10; make test-azurite). The two of
# patterns' conformance suite each have an Azurite of their own (two
# conformance tests at once on one Azurite took 214 s, above); the
# examples and consistency share one (tools/withazurite): each of their
# dozen test binaries started one before, and starting Azurite takes about
# 1.5 s of CPU (Node.js loading it; 31 Azurites took 107 s of make test's
# CPU, 2026-11-29, this machine).
test: test-setup
	$(MAKE) --no-print-directory -j 5 --output-sync=target test-race test-plain test-azurite-race test-azurite-plain test-azurite-examples

NICE := $(shell command -v nice >/dev/null 2>&1 && echo nice -n 5)

test-race:
	$(TEST_ENV) $(NICE) $(GO) test -race -p 4 $(TEST_FLAGS) -skip '$(RACE_SKIP)' $(LONGEST_FIRST) ./...

test-plain:
	$(TEST_ENV) $(NICE) $(GO) test -p 3 $(TEST_FLAGS) -run '$(RACE_SKIP)' ./patterns/ ./tablecopy/ ./cmd/tablekit/ ./internal/throttle/

test-azurite: test-azurite-race test-azurite-plain test-azurite-examples

test-azurite-race:
	$(AZURITE_ENV) $(GO) test -race $(AZURITE_FLAGS) -run '$(CLEAN_MODES)' ./patterns/

test-azurite-plain:
	$(AZURITE_ENV) $(GO) test $(AZURITE_FLAGS) -run '^(TestConformance.*|Example.*)$$' -skip '$(EMULATOR_ONLY)' ./patterns/

test-azurite-examples:
	$(GO) build -o $(WITHAZURITE) ./tools/withazurite
	$(AZURITE_ENV) $(WITHAZURITE) -- $(GO) test $(AZURITE_FLAGS) -run '^(TestConformance.*|Example.*)$$' ./consistency/ ./examples/...

# Before the runs, the installs and Go's checks (vet, go.mod tidy, the
# emulator binary) run side by side, in a make of their own with -j, so a
# failure of any one still fails `make test`: on a machine's first run npm
# ci keeps about one CPU busy (it writes 365 MB of node_modules; later runs
# link the machine's copy, below) and go vet, which on a fresh clone with a
# cold build cache compiles every package of the module, the other. On fresh clones
# (warm caches) the installs, vet, tidy and build took 107 s side by side
# (load 5.3 to 6.1) and 128 s one after the other (load 1.2 to 5.9)
# (2026-11-28, this 2-core machine; /usr/bin/time make test-setup, and the
# same steps in a shell one after the other).
#
# The setup also compiles the test packages two runs share, once: the runs
# go at once, and Go's build cache does not hold back a compile another go
# command has started, so test-race and test-azurite-race each compiled
# patterns' tests and everything they import with -race, and test-plain
# and test-azurite-plain patterns' tests without it. `go list -export`
# compiles a package as go test would, without linking or running it; with
# the packages compiled before it takes a quarter of a second. From a cold
# build cache, the race run's compile (go test -race -p 4 -run '^$$' ./...)
# beside test-azurite-race's (./patterns/) took 137 s and 252 s of CPU;
# after `go list -race -test -export -deps ./patterns/`, the three took
# 110 s and 187 s (2026-11-29, this 2-core machine). A whole make test from
# cold caches (Go's and npm's) took 394 s before and 400 s after: single
# runs, within what make test varies from run to run.
PLAIN_PKGS := ./patterns/ ./tablecopy/ ./cmd/tablekit/ ./internal/throttle/ ./consistency/ ./examples/... ./tools/withazurite

test-setup:
	$(MAKE) --no-print-directory -j 4 --output-sync=line \
		$(AZURITE) $(JSINTEROP) pyinterop-install go-checks go-compile-race

go-checks:
	$(GO) vet ./...
	$(GO) list -test -export -deps $(PLAIN_PKGS) > /dev/null
	$(GO) mod tidy -diff
	$(GO) build -o $(EMULATOR_BIN) ./cmd/tablekit

go-compile-race:
	$(GO) list -race -test -export -deps ./patterns/ > /dev/null

# ---- make demo ---------------------------------------------------------------

demo: $(if $(filter azurite,$(TARGET)),$(AZURITE))
	$(GO) run ./tools/demo -target $(TARGET)

# ---- make bench --------------------------------------------------------------

# Every benchmark, BENCH_COUNT rounds each: the sides of a comparison
# alternate round by round (TABLEKIT_BENCH=rounds=N; docs/BENCHMARKS.md,
# "Settings", has every setting), then one table of medians and ratios
# tablekit / reference, and tablekit / ceiling, paired by round. Raw output
# is kept in bench.out. The client benchmarks run on plain Azurite in its
# own process, so the benchmark process's CPU is the client's alone; the
# emulator's benchmarks start both services themselves, the whole-table
# ones their scale model (1,000,000 entities, minutes a round: one round,
# long-rounds).
bench: $(AZURITE)
	TABLEKIT_TEST_TARGET=azurite-lenient TABLEKIT_TEST_TIERS=azurite TABLEKIT_BENCH=rounds=$(BENCH_COUNT) \
		$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 180m ./... | tee bench.out
	@echo
	@$(GO) run ./tools/benchreport < bench.out

# ---- make fuzz ---------------------------------------------------------------

# Every fuzz target (found by grepping for `func Fuzz` in *_test.go), each
# for FUZZTIME, one after the other; stops at the first crash, which go
# test saves under the package's testdata/fuzz/ (commit it: `go test` then
# replays it as a regression test). `go test` already runs each target's
# seed corpus; a short real run is `make fuzz FUZZTIME=5s`.
fuzz:
	@targets=$$(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | grep -v '/node_modules/' | sed 's/:func /:/' | sort); \
	test -n "$$targets" || { echo "no fuzz targets found"; exit 1; }; \
	for t in $$targets; do \
		dir=$$(dirname $${t%%:*}); name=$${t##*:}; \
		echo "== $$dir $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$dir || exit 1; \
	done

# ---- make images -------------------------------------------------------------

# tablekit-emulator:$(VERSION) and tablekit-worker:$(VERSION), FROM scratch
# with static binaries built here, so nothing is pulled, each a manifest list
# of linux/amd64 and linux/arm64 (cross-compiled: no emulation); docker when
# its daemon answers (its containerd image store holds the lists), else
# podman (ENGINE=podman or docker to choose). The
# image files are in build/; build/images.sh builds the images and checks
# their configuration, their contents and their binaries (docs/DEPLOY.md,
# "The image", says how to push them). VERSION is git describe's by default
# (v0.1.0 at that tag); CA_BUNDLE is the CA certificates copied into the
# worker's image (by default /etc/ssl/certs/ca-certificates.crt).
images:
	GO='$(GO)' ENGINE='$(ENGINE)' VERSION='$(VERSION)' CA_BUNDLE='$(CA_BUNDLE)' build/images.sh

# ---- installs ----------------------------------------------------------------

# npm ci installs exactly what package-lock.json pins (Azurite 3.37.0), once
# per machine: build/npm-ci.sh keeps the install in the user's cache, keyed
# by the lock file, and links node_modules to it (on a fresh clone npm ci took
# 31 s of wall and CPU for Azurite, the link 0.1 s; TABLEKIT_NPM_CACHE=off
# installs in place).
$(AZURITE): $(AZURITE_DIR)/package.json $(AZURITE_DIR)/package-lock.json
	build/npm-ci.sh $(AZURITE_DIR)
	@test -x $(AZURITE)

azurite-install: $(AZURITE)

# npm ci installs exactly the Azure SDK for JavaScript that package-lock.json
# pins (data-tables 13.3.2, storage-queue 12.32.0, storage-blob 12.34.0).
$(JSINTEROP): $(JSINTEROP_DIR)/package.json $(JSINTEROP_DIR)/package-lock.json
	build/npm-ci.sh $(JSINTEROP_DIR)
	@test -f $(JSINTEROP)

jsinterop-install: $(JSINTEROP)

# The python tier drives the Azure SDK for Python that Debian packages
# (python3-azure: azure-data-tables 12.4.2, azure-storage-queue 12.6.0b1,
# azure-storage-blob 12.15.0b1). Debian's python3 or the python3 on PATH
# must find its modules (tools/testenv looks in that order); where neither
# does, apt-get installs the package (as root, or through sudo).
PYINTEROP_FIND := import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in ('azure.data.tables', 'azure.storage.queue', 'azure.storage.blob')) else 1)
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

pyinterop-install:
	@/usr/bin/python3 -c "$(PYINTEROP_FIND)" 2>/dev/null || python3 -c "$(PYINTEROP_FIND)" 2>/dev/null || \
		{ $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-azure && /usr/bin/python3 -c "$(PYINTEROP_FIND)"; }

# One Azurite in the foreground on the default ports, for manual use.
azurite: $(AZURITE)
	$(AZURITE) --inMemoryPersistence --skipApiVersionCheck --disableTelemetry \
		--blobHost 127.0.0.1 --queueHost 127.0.0.1 --tableHost 127.0.0.1
