package tablecopy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A backup cuts each table into key ranges, each with its own segments,
// and names them in its manifest: the ranges follow one another, every
// segment is in one range and holds only its keys, and the ranges' sums
// add up to the table's. Cutting costs SplitScan's probes and one
// request per range after the first. Verification compares a table with
// the backup by the manifest's ranges, and a difference names its
// range's segments; the same backup's manifest without ranges (as
// earlier builds wrote it) verifies as before, by ranges of RangeKeys.
func TestBackupRangesAndVerifyByThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, counter := testenv.CountingAccount(t)
	src := newRows(t, acct, true)
	// 40 partitions, one of them holding half the entities.
	var es []entity.Entity
	for i := range 2500 {
		pk := "big"
		if i%2 == 1 {
			pk = "p" + string(rune('a'+i%20)) + string(rune('a'+i%40/20))
		}
		es = append(es, testenv.EveryType(pk, keys.PadInt(int64(i), 6), i))
	}
	if _, err := src.BulkWrite(ctx, es, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		t.Fatal(err)
	}

	// The requests of the cut, measured apart: the same split, then a
	// backup read as one sequential range (3 pages).
	so := patterns.ScanOptions{QueryOptions: patterns.QueryOptions{Select: []string{"PartitionKey", "RowKey"}, Top: 1, AllowUnknownProperties: true}, Parallel: 1}
	counter.Take()
	tokens, err := src.SplitScan(ctx, keys.Filter{}, 8, &so)
	if err != nil {
		t.Fatal(err)
	}
	split := counter.Take()
	loc := tablecopy.Dir(t.TempDir())
	res, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, loc, &tablecopy.BackupOptions{Parallel: 1, Ranges: 8, SegmentBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := counter.Take(), split+int64(len(tokens)-1)+3; got != want {
		t.Errorf("the backup sent %d requests; want %d (the split's %d, %d first keys, 3 pages)", got, want, split, len(tokens)-1)
	}
	tb := res.Manifest.Tables[0]
	if len(tb.Ranges) != len(tokens) || len(tb.Ranges) < 4 {
		t.Fatalf("%d ranges for %d tokens; want them equal, and at least 4", len(tb.Ranges), len(tokens))
	}
	in := map[string]int{}
	var total tablecopy.Sum
	for i, r := range tb.Ranges {
		if i == 0 && r.From != (tablecopy.Key{}) || i > 0 && *tb.Ranges[i-1].To != r.From || (r.To == nil) != (i == len(tb.Ranges)-1) {
			t.Fatalf("range %d (%v to %v) does not follow range %d", i, r.From, r.To, i-1)
		}
		if len(r.Segments) == 0 || r.Entities == 0 {
			t.Errorf("range %d holds no entities", i)
		}
		var sum tablecopy.Sum
		for _, f := range r.Segments {
			in[f]++
			for _, s := range tb.Segments {
				if s.File == f {
					sum.Merge(tablecopy.Sum{Count: s.Entities})
					if s.First.Compare(r.From) < 0 || r.To != nil && s.Last.Compare(*r.To) >= 0 {
						t.Errorf("segment %s (%v to %v) is outside range %d (%v to %v)", f, s.First, s.Last, i, r.From, r.To)
					}
				}
			}
		}
		if sum.Count != r.Entities {
			t.Errorf("range %d counts %d entities, its segments %d", i, r.Entities, sum.Count)
		}
		total.Count += r.Entities
	}
	for _, s := range tb.Segments {
		if in[s.File] != 1 {
			t.Errorf("segment %s is in %d ranges", s.File, in[s.File])
		}
	}
	if total.Count != int64(len(es)) {
		t.Errorf("the ranges hold %d entities, want %d", total.Count, len(es))
	}

	checks, err := tablecopy.VerifyBackup(ctx, loc, &tablecopy.VerifyOptions{Account: acct})
	if err != nil || len(checks) != 1 || !checks[0].OK() || checks[0].Ranges != len(tb.Ranges) {
		t.Fatalf("verify: %+v %v; want OK in %d ranges", checks, err, len(tb.Ranges))
	}
	// One entity changed: one range differs, named with its segments.
	changed := es[1777]
	changed.Properties = map[string]entity.Value{"Other": entity.String("changed")}
	if err := src.Upsert(ctx, &changed, nil); err != nil {
		t.Fatal(err)
	}
	checks, err = tablecopy.VerifyBackup(ctx, loc, &tablecopy.VerifyOptions{Account: acct})
	if err != nil || len(checks) != 1 || len(checks[0].Mismatches) != 1 {
		t.Fatalf("verify after a change: %+v %v; want one mismatch", checks, err)
	}
	m := checks[0].Mismatches[0]
	k := tablecopy.Key{PartitionKey: changed.PartitionKey, RowKey: changed.RowKey}
	var holder tablecopy.KeyRange
	for _, r := range tb.Ranges {
		if r.From.Compare(k) <= 0 && (r.To == nil || k.Compare(*r.To) < 0) {
			holder = r
		}
	}
	if !slices.Equal(m.Segments, holder.Segments) || len(m.Changed) != 1 || m.Changed[0] != k {
		t.Errorf("mismatch %v; want the change of %v in the range of segments %v", m, k, holder.Segments)
	}

	// The manifest as an earlier build wrote it, without ranges.
	path := filepath.Join(loc.String(), "manifest.json")
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, tt := range raw["tables"].([]any) {
		delete(tt.(map[string]any), "ranges")
	}
	body, _ = json.Marshal(raw)
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	checks, err = tablecopy.VerifyBackup(ctx, loc, &tablecopy.VerifyOptions{Account: acct, RangeKeys: 1000})
	if err != nil || len(checks) != 1 || checks[0].Ranges != 3 || len(checks[0].Mismatches) != 1 || checks[0].Mismatches[0].Segments != nil {
		t.Fatalf("verify without ranges: %+v %v; want 3 ranges of 1,000 keys, one differing", checks, err)
	}
}
