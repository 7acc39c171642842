package benchutil

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Env holds every benchmark setting, as key=value pairs separated by
// commas: TABLEKIT_BENCH=rounds=6,export-entities=50000. Unset keys take
// their defaults (what make bench runs); a quick run shrinks the sizes.
// docs/BENCHMARKS.md ("Settings") has the table of keys and defaults.
const Env = "TABLEKIT_BENCH"

// The keys of Env, each read by Int or Float where its benchmark runs.
const (
	KeyRounds              = "rounds"                 // rounds of sides a comparison runs (Rounds)
	KeyLongRounds          = "long-rounds"            // the most rounds a minutes-long benchmark runs (LongRounds)
	KeyExportEntities      = "export-entities"        // BenchmarkExportSkewed's table
	KeyExportLatencyMS     = "export-latency-ms"      // the latency BenchmarkExportSkewed's proxy adds, ms
	KeyExportSweep         = "export-sweep"           // 1 adds the export benchmarks' other Parallel sides
	KeyImportEntities      = "import-entities"        // BenchmarkBulkThrottled's entities per op
	KeyModelImportEntities = "model-import-entities"  // BenchmarkBulkModel's entities per op
	KeyModelEntities       = "model-entities"         // the whole-table benchmarks' table on the scale model
	KeyModelScale          = "model-scale"            // the scale model's Scale in the benchmarks
	KeyCopyEntities        = "copy-entities"          // tablecopy's copy and backup benchmarks' table
	KeyWholeAzuriteEnt     = "whole-azurite-entities" // BenchmarkWholeTable's table on Azurite
	KeyPageEntities        = "page-entities"          // the emulator's table a page is read from
	KeyAzuritePageEntities = "azurite-page-entities"  // the same on Azurite's side
	KeyLoadEntities        = "load-entities"          // what BulkWrite loads on the emulator
	KeyAzuriteLoadEntities = "azurite-load-entities"  // the same on Azurite
	KeyDistEntities        = "dist-entities"          // BenchmarkDistributedCopyWorkers' table
	KeyDistScale           = "dist-scale"             // BenchmarkDistributedCopyWorkers' model scale
	KeyPaceSeconds         = "pace-seconds"           // BenchmarkBulkPace's job length past the burst, at the target
)

var keys = []string{
	KeyRounds, KeyLongRounds, KeyExportEntities, KeyExportLatencyMS, KeyExportSweep,
	KeyImportEntities, KeyModelImportEntities, KeyModelEntities, KeyModelScale,
	KeyCopyEntities, KeyWholeAzuriteEnt, KeyPageEntities, KeyAzuritePageEntities,
	KeyLoadEntities, KeyAzuriteLoadEntities, KeyDistEntities, KeyDistScale,
	KeyPaceSeconds,
}

// Int is the setting key of Env, a positive integer, or def when it is
// unset. A value that is not one, or a key Env should not hold, fails tb.
func Int(tb testing.TB, key string, def int) int {
	tb.Helper()
	v, ok := lookup(tb, key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s: %s=%q: want a positive integer", Env, key, v)
	}
	return n
}

// Float is Int for a positive number.
func Float(tb testing.TB, key string, def float64) float64 {
	tb.Helper()
	v, ok := lookup(tb, key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		tb.Fatalf("%s: %s=%q: want a positive number", Env, key, v)
	}
	return f
}

// Bool reports whether the setting key is 1.
func Bool(tb testing.TB, key string) bool {
	tb.Helper()
	v, ok := lookup(tb, key)
	if ok && v != "0" && v != "1" {
		tb.Fatalf("%s: %s=%q: want 0 or 1", Env, key, v)
	}
	return v == "1"
}

// lookup is the value of key in Env. It fails tb when Env is malformed or
// names a key that is not one of the keys above, so that a typo does not
// quietly run the defaults.
func lookup(tb testing.TB, key string) (string, bool) {
	tb.Helper()
	settings, err := parse(os.Getenv(Env))
	if err != nil {
		tb.Fatal(err)
	}
	if !slices.Contains(keys, key) {
		tb.Fatalf("%s: no setting %q", Env, key)
	}
	v, ok := settings[key]
	return v, ok
}

// parse reads Env's key=value pairs.
func parse(s string) (map[string]string, error) {
	settings := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, fmt.Errorf("%s=%q: %q is not key=value", Env, s, kv)
		}
		if !slices.Contains(keys, k) {
			return nil, fmt.Errorf("%s=%q: no setting %q (the settings: %s)", Env, s, k, strings.Join(keys, ", "))
		}
		settings[k] = v
	}
	return settings, nil
}
