package tablecopy_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/buildinfo"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A distributed copy (with Insert) and a distributed backup, each range's
// message sent twice, drained by two in-process workers: duplicates
// running at once take ranges over from each other, and still every
// entity is copied and backed up exactly once (an insert written twice
// would fail; a key in two segments fails the finish), the manifest
// covers every range, and both verify.
func TestJobsUnderDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t, acct, true)
	es := fill(t, src, 1500, 15)
	dst := newRows(t, acct, false)
	ck := newRows(t, acct, false)
	t.Cleanup(func() {
		_ = dst.Drop(context.Background(), nil)
		_ = ck.Drop(context.Background(), nil)
	})
	q, err := consistency.NewQueue(acct, testenv.QueueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cj, err := tablecopy.StartCopyJob(ctx, src, dst, q, &tablecopy.JobOptions{Ranges: 6, Insert: true, CheckpointTable: ck.Name(), Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	loc := tablecopy.Blob(acct.Blobs(), testenv.ContainerName(t), "dist")
	bj, err := tablecopy.StartBackupJob(ctx, acct, []string{src.Name()}, loc, q, &tablecopy.JobOptions{Ranges: 5, SegmentBytes: 16 << 10, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Ranges < 2 || bj.Ranges < 2 {
		t.Fatalf("split into %d and %d ranges; want several", cj.Ranges, bj.Ranges)
	}
	for _, ref := range []string{cj.Ref, bj.Ref} {
		if n, err := tablecopy.RequeueJob(ctx, ref, acct, q); err != nil || n < 2 {
			t.Fatalf("RequeueJob(%s) = %d, %v", ref, n, err)
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{q.Name()}, Concurrency: 8, UntilEmpty: true,
			PollInterval: 100 * time.Millisecond, DepthInterval: -1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		w.Handle(tablecopy.KindRange, tablecopy.RangeHandler(nil))
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx, nil) }()
	}
	wg.Wait()

	for _, ref := range []string{cj.Ref, bj.Ref} {
		s, err := tablecopy.ReadJob(ctx, ref, acct, &tablecopy.JobStatusOptions{QueueAccount: acct})
		if err != nil {
			t.Fatal(err)
		}
		attempts := 0
		for _, r := range s.Ranges {
			attempts += r.Attempts
		}
		t.Logf("%s job: %d ranges, %d attempts, %d entities", s.Op, len(s.Ranges), attempts, s.Entities)
		if !s.Complete || s.RangesFailed != 0 || s.RangesDone != len(s.Ranges) {
			t.Fatalf("%s job %s: %+v", s.Op, ref, s)
		}
	}
	got, err := patterns.Collect(dst.Query(ctx, keys.Filter{}, &patterns.QueryOptions{SelectAll: true, AllowTableScan: true}))
	if err != nil {
		t.Fatal(err)
	}
	sameEntities(t, es, got)
	m, err := tablecopy.ReadManifest(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tablekit != buildinfo.Version() {
		t.Fatalf("manifest's build = %q; want %q, as tablekit version prints it", m.Tablekit, buildinfo.Version())
	}
	if tb := m.Tables[0]; tb.Entities != int64(len(es)) || tb.Keys.Count != int64(len(es)) || len(tb.Segments) < 2 {
		t.Fatalf("manifest: %d entities, %d keys, %d segments; want %d, %d, several", tb.Entities, tb.Keys.Count, len(tb.Segments), len(es), len(es))
	}
	checks, err := tablecopy.VerifyBackup(ctx, loc, &tablecopy.VerifyOptions{Account: acct})
	if err != nil || len(checks) != 1 || !checks[0].OK() {
		t.Fatalf("VerifyBackup = %+v, %v", checks, err)
	}
	if recs, err := q.Poisoned(ctx, 32, nil); err != nil || len(recs) != 0 {
		t.Fatalf("poisoned: %+v, %v", recs, err)
	}
}
