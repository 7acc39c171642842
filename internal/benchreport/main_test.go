package main

import (
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
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| patterns.Scan10k | raw | 200.00 ms, 50000 entities/s | 500.00 ms, 17000 entities/s | 2.50x | 100 | 900 | 3 |",
		"| entity.Decode | aztables | 10.0 µs | 40.0 µs | 4.00x |",
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
