package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportPairsSidesAndTakesMedians(t *testing.T) {
	in := `goos: linux
pkg: github.com/tablekit/tablekit/patterns
BenchmarkScan10k/impl=tablekit-2   10   200000000 ns/op   50000 entities/s   100 allocs/op
BenchmarkScan10k/impl=raw-2        10   600000000 ns/op   16000 entities/s   900 allocs/op
BenchmarkScan10k/impl=tablekit-2   10   100000000 ns/op   60000 entities/s   100 allocs/op
BenchmarkScan10k/impl=raw-2        10   400000000 ns/op   17000 entities/s   900 allocs/op
BenchmarkScan10k/impl=tablekit-2   10   300000000 ns/op   40000 entities/s   100 allocs/op
BenchmarkScan10k/impl=raw-2        10   500000000 ns/op   18000 entities/s   900 allocs/op
pkg: github.com/tablekit/tablekit/entity
BenchmarkDecode/codec=tablekit-2   1000   10000 ns/op
BenchmarkDecode/codec=aztables-2   1000   40000 ns/op
BenchmarkLonely-2   1000   40000 ns/op
BenchmarkTransactions/concurrency=4-2   100   5000000 ns/op   200 tx/s   9.5 p50-ms
BenchmarkBulk/impl=tablekit-2   1   1000000000 ns/op   95.0 limit-%   2.5 throttled-%
BenchmarkBulk/impl=fixed-2   1   2000000000 ns/op   50.0 limit-%   10 throttled-%
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| patterns.Scan10k | raw | 200.00 ms, 50000 entities/s | 500.00 ms, 17000 entities/s | 3.00x | 100 | 900 | 3 |",
		"| entity.Decode | aztables | 10.0 µs | 40.0 µs | 4.00x |",
		"| entity.Bulk | fixed | 1.00 s, 95 limit-%, 2.50 throttled-% | 2.00 s, 50 limit-%, 10 throttled-% | 2.00x |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "| entity.Transactions/concurrency=4 | 5.00 ms, 9.50 p50-ms, 200 tx/s | 1 |") {
		t.Errorf("a parameterised benchmark is missing from the single table:\n%s", got)
	}
	if !strings.Contains(got, "| entity.Lonely | 40.0 µs | 1 |") {
		t.Errorf("a benchmark without sides is missing from its own table:\n%s", got)
	}
}

// Rounds (impl=X#01, ...) pair up; the ceiling gets its own table with
// the wall-time percentage and the CPU ratio, each a median of per-round
// ratios; a tablekit side with no reference is listed alone.
func TestReportRoundsAndCeiling(t *testing.T) {
	in := `pkg: github.com/tablekit/tablekit/patterns
BenchmarkGet/impl=tablekit-2        100   1000000 ns/op   100 cpu-µs/entity
BenchmarkGet/impl=ceiling-2         100    900000 ns/op    50 cpu-µs/entity
BenchmarkGet/impl=ceiling#01-2      100    500000 ns/op    40 cpu-µs/entity
BenchmarkGet/impl=tablekit#01-2     100   1000000 ns/op   120 cpu-µs/entity
BenchmarkGet/impl=tablekit#02-2     100   2000000 ns/op   150 cpu-µs/entity
BenchmarkGet/impl=ceiling#02-2      100   1900000 ns/op    50 cpu-µs/entity
pkg: github.com/tablekit/tablekit/consistency
BenchmarkWorker/concurrency=16/impl=tablekit-2   100   5000000 ns/op
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// Per-round ratios 0.9, 0.5, 0.95: median 90%; CPU 2, 3, 3: 3.00x.
	for _, want := range []string{
		"| patterns.Get | 1.00 ms | 900.0 µs | 90% | 120 cpu-µs/entity | 50 cpu-µs/entity | 3.00x | 3 |",
		"| patterns.Get | ceiling | 1.00 ms, 120 cpu-µs/entity | 900.0 µs, 50 cpu-µs/entity | 0.90x |",
		"| consistency.Worker/concurrency=16/impl=tablekit | 5.00 ms | 1 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// Sides that are all tablekit's (memory, disk) are listed alone and each
// against the ceiling, paired by round; without a ceiling they are still
// listed, not dropped.
func TestReportSidesWithoutTablekitAgainstTheCeiling(t *testing.T) {
	in := `pkg: github.com/tablekit/tablekit/emulator
BenchmarkLocationPoint/op=read/impl=memory-2      100   100000 ns/op   10000 req/s
BenchmarkLocationPoint/op=read/impl=disk-2        100   200000 ns/op    5000 req/s
BenchmarkLocationPoint/op=read/impl=ceiling-2     100    50000 ns/op   20000 req/s
BenchmarkLocationPoint/op=read/impl=disk#01-2     100   200000 ns/op    5000 req/s
BenchmarkLocationPoint/op=read/impl=ceiling#01-2  100    80000 ns/op   12500 req/s
BenchmarkLocationPoint/op=read/impl=memory#01-2   100   100000 ns/op   10000 req/s
BenchmarkLocationPoint/op=read/impl=ceiling#02-2  100    90000 ns/op   11111 req/s
BenchmarkLocationPoint/op=read/impl=memory#02-2   100   100000 ns/op   10000 req/s
BenchmarkLocationPoint/op=read/impl=disk#02-2     100   100000 ns/op   10000 req/s
BenchmarkLocationBulkLoad/impl=memory-2   1   1000000000 ns/op   30000 entities/s
BenchmarkLocationBulkLoad/impl=disk-2     1   2000000000 ns/op   15000 entities/s
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// memory: ceiling/memory per round 0.5, 0.8, 0.9: 80%; disk: 0.25, 0.4, 0.9: 40%.
	for _, want := range []string{
		"| emulator.LocationPoint/op=read impl=memory | 100.0 µs | 80.0 µs | 80% |",
		"| emulator.LocationPoint/op=read impl=disk | 200.0 µs | 80.0 µs | 40% |",
		"| emulator.LocationPoint/op=read/impl=memory | 100.0 µs, 10000 req/s | 3 |",
		"| emulator.LocationBulkLoad/impl=disk | 2.00 s, 15000 entities/s | 1 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "op=read impl=ceiling |") {
		t.Errorf("the ceiling is compared with itself:\n%s", got)
	}
}

// A benchmark with a raw side (the hand-written code) is reported against
// it in a table of its own: tablekit's rate and client CPU per op as
// ratios to raw's, each the median of the per-round ratios, whatever the
// tablekit side is called; the other tables stay as they were.
func TestReportAgainstRaw(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    []string
		notWant []string
	}{{
		// Rate 0.8 and 1.0 a round: 0.90x; CPU 1.25 and 0.95: 1.10x.
		file: "workervsloop.txt",
		want: []string{
			"| consistency.WorkerVsLoop impl=worker | 650 tx/s | 750 tx/s | 0.90x | 535 cpu-µs/tx | 500 cpu-µs/tx | 1.10x | 2 |",
			"| consistency.WorkerVsLoop/impl=worker | 1.62 ms, 535 cpu-µs/tx, 650 tx/s | 2 |",
			"| consistency.WorkerVsLoop/impl=raw | 1.50 ms, 500 cpu-µs/tx, 750 tx/s | 2 |",
		},
		notWant: []string{"impl=raw | 750 tx/s"},
	}, {
		// Scan: rate 1.50 and 2.00: 1.75x; CPU 0.5 and 0.8: 0.65x. Decode
		// reports no rate and no CPU: raw's time over tablekit's, 3 and 2.
		file: "scan.txt",
		want: []string{
			"| patterns.Scan | 20000 entities/s | 11667 entities/s | 1.75x | 2.20 cpu-µs/entity | 3.50 cpu-µs/entity | 0.65x | 2 |",
			"| patterns.Decode | 10.0 µs | 25.0 µs | 2.50x |  |  |  | 2 |",
			"| patterns.Scan | raw | 100.00 ms, 2.20 cpu-µs/entity, 20000 entities/s | 175.00 ms, 3.50 cpu-µs/entity, 11667 entities/s | 1.75x | 10 | 90 | 2 |",
			"| patterns.Scan | 100.00 ms | 95.00 ms | 95% | 2.20 cpu-µs/entity | 1 cpu-µs/entity | 2.20x | 2 |",
			"| patterns.Decode | raw | 10.0 µs | 25.0 µs | 2.50x | 5 | 40 | 2 |",
		},
		notWant: []string{"patterns.Scan impl=ceiling", "| patterns.Scan | 20000 entities/s | 21111 entities/s"},
	}} {
		t.Run(tc.file, func(t *testing.T) {
			in, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var out strings.Builder
			if err := run(in, &out); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("report lacks %q:\n%s", want, got)
				}
			}
			for _, no := range tc.notWant {
				if strings.Contains(got, no) {
					t.Errorf("report has %q:\n%s", no, got)
				}
			}
		})
	}
}

// Jobs through a throttle (limit-% and throttled-% both reported) get a
// table of their own: each metric's median with the range over the
// rounds, and whether the bulk writer's goals (at least 90%, at most 5%)
// were met.
func TestReportThrottledJobs(t *testing.T) {
	in := `pkg: github.com/tablekit/tablekit/patterns
BenchmarkBulkPace/shape=account/burst=small-2       1   1000000000 ns/op   98.0 limit-%   2.5 throttled-%   500 requests/op
BenchmarkBulkPace/shape=partition/burst=small-2     1   1000000000 ns/op   89.0 limit-%   2.0 throttled-%   400 requests/op
BenchmarkBulkPace/shape=partition/burst=small#01-2  1   1000000000 ns/op   91.0 limit-%   4.0 throttled-%   400 requests/op
BenchmarkBulkPace/shape=account/burst=small#01-2    1   1000000000 ns/op   99.0 limit-%   6.0 throttled-%   500 requests/op
BenchmarkBulkPace/shape=partition/burst=small#02-2  1   1000000000 ns/op   92.0 limit-%   3.0 throttled-%   400 requests/op
BenchmarkBulkPace/shape=account/burst=small#02-2    1   1000000000 ns/op   97.0 limit-%   5.5 throttled-%   500 requests/op
BenchmarkGet/impl=tablekit-2   100   1000000 ns/op
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| patterns.BulkPace/shape=account/burst=small | 98 (97 to 99) | 5.50 (2.50 to 6) | no | 3 |",
		"| patterns.BulkPace/shape=partition/burst=small | 91 (89 to 92) | 3 (2 to 4) | yes | 3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "patterns.Get") > 1 {
		t.Errorf("a benchmark without limit-%% and throttled-%% is in the throttled table:\n%s", got)
	}
}
