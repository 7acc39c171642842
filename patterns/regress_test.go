package patterns_test

// Regression tests for issue 14's defects 1 and 2: a write whose response
// is lost, retried by azcore, meets its own first attempt (409 for an
// insert, 412 for a conditional replace). Each runs with azcore's default
// retry options (the first retry after about 0.8 s, as users have them)
// and with fast ones.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// errOutcomeUnknown is the error a write returns when nothing can tell
// whether it landed.
var errOutcomeUnknown = tablekit.ErrOutcomeUnknown

// regressFastRetry is the fast retry mode of these tests.
var regressFastRetry = policy.RetryOptions{MaxRetries: 12, RetryDelay: time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}

// attemptLog records every HTTP attempt as the service answered it. It
// sits behind the fault policy, so it sees the true answer of an attempt
// whose response the fault policy then loses.
type attemptLog struct {
	mu    sync.Mutex
	recs  []attemptRec
	match func(*http.Request) bool
}

type attemptRec struct {
	Method, Path string
	Status       int // 0: a transport error
}

func (l *attemptLog) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if l.match == nil || l.match(req.Raw()) {
		rec := attemptRec{Method: req.Raw().Method, Path: req.Raw().URL.Path}
		if err == nil {
			rec.Status = resp.StatusCode
		}
		l.mu.Lock()
		l.recs = append(l.recs, rec)
		l.mu.Unlock()
	}
	return resp, err
}

func (l *attemptLog) statuses() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int, len(l.recs))
	for i, r := range l.recs {
		out[i] = r.Status
	}
	return out
}

// lostResponseAccount is an account whose retry options are mode's and
// whose first request that match accepts reaches the service and then
// fails with kind (the response is lost), calling hold (when not nil)
// before the failure reaches azcore. log records the service's answers to
// the requests match accepts.
func lostResponseAccount(t *testing.T, mode faults.RetryMode, kind faults.Kind, match func(*http.Request) bool, hold func()) (*tablekit.Account, *faults.Policy, *attemptLog) {
	t.Helper()
	fp, err := faults.New(1, faults.Rule{Kind: kind, Rate: 1, After: true, Match: faults.Once(match), Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	log := &attemptLog{match: match}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		Retry:            mode.Retry,
		PerRetryPolicies: []policy.Policy{fp, log},
	}})
	return acct, fp, log
}

func transportName(sdk bool) string {
	if sdk {
		return "sdk"
	}
	return "rest"
}

// regressPhoto is the guide's employee with a photo in Blob storage.
type regressPhoto struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	Photo        []byte `table:"Photo,blob"`
}

// checkEchoScenario asserts that the write the fault hit was applied by
// the service (its answer, lost, was a success) and that azcore's retry of
// it then met the write's own first attempt with conflict: the scenario
// under test really happened.
func checkEchoScenario(t *testing.T, fp *faults.Policy, log *attemptLog, conflict int) {
	t.Helper()
	st := log.statuses()
	if conflict == 0 {
		// A read-modify-write sends its conditional write once, without
		// azcore's retries, and settles a lost answer by reading back.
		if fp.Injected() != 1 || len(st) != 1 || st[0] < 200 || st[0] > 299 {
			t.Fatalf("scenario not reproduced: %d faults injected, the service answered the write's attempts %v; want one, applied (2xx, its answer lost), and no retry", fp.Injected(), st)
		}
		return
	}
	if fp.Injected() != 1 || len(st) < 2 || st[0] < 200 || st[0] > 299 || st[1] != conflict {
		t.Fatalf("scenario not reproduced: %d faults injected, the service answered the write's attempts %v; want the first applied (2xx, its answer lost) and the retry answered %d", fp.Injected(), st, conflict)
	}
}

// Defect 1, the lost photo: LargeEntities.Insert's table insert lands but
// its response is lost; azcore retries and the retry gets 409. Insert must
// not report ErrAlreadyExists for its own write (nor delete the uploaded
// blob): it returns nil, or at worst ErrOutcomeUnknown, and Get returns the
// photo.
func TestLargeEntitiesInsertSurvivesLostResponse(t *testing.T) {
	t.Parallel()
	g := testenv.NewSideBySide(t, 0) // they wait in azcore's retry delays
	for _, mode := range faults.RetryModes(regressFastRetry) {
		for _, sdk := range []bool{false, true} {
			for _, kind := range []faults.Kind{faults.ConnReset, faults.Status503} {
				g.Run(mode.Name+"/"+transportName(sdk)+"/"+kind.String(), func(t *testing.T) {
					ctx := context.Background()
					table := testenv.TableName(t)
					acct, fp, log := lostResponseAccount(t, mode, kind, faults.Request(http.MethodPost, "/"+table), nil)
					fp.SetEnabled(false)
					l, err := patterns.NewLargeEntities[regressPhoto](acct, table, testenv.ContainerName(t), &patterns.LargeEntitiesOptions{Table: &patterns.TableOptions{SDKPath: sdk}})
					if err != nil {
						t.Fatal(err)
					}
					if err := l.CreateIfNotExists(ctx, nil); err != nil {
						t.Fatal(err)
					}
					fp.SetEnabled(true)
					photo := largePhoto(14, 40_000)
					v := regressPhoto{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", Photo: photo}
					start := time.Now()
					err = l.Insert(ctx, &v, nil)
					took := time.Since(start)
					checkEchoScenario(t, fp, log, http.StatusConflict)
					if errors.Is(err, tablekit.ErrAlreadyExists) {
						t.Errorf("Insert whose own first attempt landed = %v: reported as ErrAlreadyExists", err)
					}
					if err != nil && !errors.Is(err, errOutcomeUnknown) && !errors.Is(err, tablekit.ErrAlreadyExists) {
						t.Errorf("Insert whose own first attempt landed = %v, want nil (or ErrOutcomeUnknown)", err)
					}
					got, err := l.Get(ctx, "Sales", "000123", nil)
					if err != nil {
						t.Fatalf("Get after the insert: %v (the stored entity references a blob that is gone)", err)
					}
					if !bytes.Equal(got.Photo, photo) || got.FirstName != "Jun" {
						t.Fatalf("Get after the insert: %d photo bytes, FirstName %q; want the %d bytes inserted and Jun", len(got.Photo), got.FirstName, len(photo))
					}
					t.Logf("Insert took %v", took.Round(time.Millisecond))
				})
			}
		}
	}
	g.Wait()
}

// Defect 1, MixedTable: its Insert must not report ErrAlreadyExists for its
// own write either.
func TestMixedTableInsertSurvivesLostResponse(t *testing.T) {
	t.Parallel()
	g := testenv.NewSideBySide(t, 0) // they wait in azcore's retry delays
	for _, mode := range faults.RetryModes(regressFastRetry) {
		for _, sdk := range []bool{false, true} {
			for _, kind := range []faults.Kind{faults.ConnReset, faults.Status503} {
				g.Run(mode.Name+"/"+transportName(sdk)+"/"+kind.String(), func(t *testing.T) {
					mixedInsertSurvivesLostResponse(t, mode, sdk, kind)
				})
			}
		}
	}
	g.Wait()
}

func mixedInsertSurvivesLostResponse(t *testing.T, mode faults.RetryMode, sdk bool, kind faults.Kind) {
	ctx := context.Background()
	table := testenv.TableName(t)
	acct, fp, log := lostResponseAccount(t, mode, kind, faults.Request(http.MethodPost, "/"+table), nil)
	reg := entity.NewRegistry(nil)
	if err := reg.Register(entity.Kind{Name: "Department", Version: 1}, regressDepartment{}); err != nil {
		t.Fatal(err)
	}
	m, err := patterns.NewMixedTable(acct, table, reg, &patterns.MixedTableOptions{Table: &patterns.TableOptions{SDKPath: sdk}})
	if err != nil {
		t.Fatal(err)
	}
	fp.SetEnabled(false)
	if err := m.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	fp.SetEnabled(true)
	err = m.Insert(ctx, &regressDepartment{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", EmployeeCount: 2}, nil)
	checkEchoScenario(t, fp, log, http.StatusConflict)
	if errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("MixedTable.Insert whose own first attempt landed = %v: reported as ErrAlreadyExists", err)
	}
	if err != nil && !errors.Is(err, errOutcomeUnknown) && !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("MixedTable.Insert whose own first attempt landed = %v, want nil (or ErrOutcomeUnknown)", err)
	}
	got, err := m.Get(ctx, "Sales", "Department", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := got.(*regressDepartment); !ok || d.DepartmentName != "Sales" || d.EmployeeCount != 2 {
		t.Fatalf("Get after the insert = %#v", got)
	}
}

type regressDepartment struct {
	PartitionKey   string
	RowKey         string
	DepartmentName string
	EmployeeCount  int
}

// regressCounter is a counter incremented through Update.
type regressCounter struct {
	PartitionKey, RowKey string
	N                    int64
}

type writerA struct{}

// Defect 2, deterministic: writer A's replace is applied but its response
// is lost, and writer B makes 9 (or 20) updates before A hears of it. (A
// azcore retry of A's write would get 412; Update sends it once and reads
// back instead.) A must either succeed with its change applied
// exactly once, or return an error wrapping ErrOutcomeUnknown (its change
// applied once, since it landed); it must never apply its change twice.
// A adds 1000, B adds 1 per update, so the stored value counts both.
func TestUpdateLostResponseWhileOthersWrite(t *testing.T) {
	t.Parallel()
	g := testenv.NewSideBySide(t, 0) // they wait in azcore's retry delays
	for _, mode := range faults.RetryModes(regressFastRetry) {
		for _, sdk := range []bool{false, true} {
			for _, others := range []int{9, 20} {
				g.Run(fmt.Sprintf("%s/%s/%d-other-writes", mode.Name, transportName(sdk), others), func(t *testing.T) {
					updateLostResponseWhileOthersWrite(t, mode, sdk, others)
				})
			}
		}
	}
	g.Wait()
}

func updateLostResponseWhileOthersWrite(t *testing.T, mode faults.RetryMode, sdk bool, others int) {
	ctx := context.Background()
	applied := make(chan struct{})
	othersDone := make(chan struct{})
	releaseA := sync.OnceFunc(func() { close(othersDone) })
	defer releaseA() // never leave A held, whatever fails
	isA := func(r *http.Request) bool { return r.Method == http.MethodPut && r.Context().Value(writerA{}) != nil }
	acct, fp, log := lostResponseAccount(t, mode, faults.ConnReset, isA, func() {
		close(applied)
		<-othersDone
	})
	tbl, err := patterns.NewTable[regressCounter](acct, testenv.TableName(t), &patterns.TableOptions{SDKPath: sdk, MaxAttempts: 50})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(ctx, &regressCounter{PartitionKey: "c", RowKey: "n"}, nil); err != nil {
		t.Fatal(err)
	}

	var callsA atomic.Int32
	var errA error
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		_, errA = tbl.Update(context.WithValue(ctx, writerA{}, true), "c", "n", func(c *regressCounter) error {
			callsA.Add(1)
			c.N += 1000
			return nil
		}, nil)
	}()
	select {
	case <-applied:
	case <-doneA:
		t.Fatalf("writer A finished (%v) without its replace reaching the service", errA)
	case <-time.After(30 * time.Second):
		t.Fatal("writer A's replace never reached the service")
	}
	// A's replace has landed; its answer is held. B writes.
	for i := 0; i < others; i++ {
		if _, err := tbl.Update(ctx, "c", "n", func(c *regressCounter) error { c.N++; return nil }, nil); err != nil {
			t.Fatalf("writer B's update %d: %v", i, err)
		}
	}
	releaseA()
	select {
	case <-doneA:
	case <-time.After(60 * time.Second):
		t.Fatal("writer A did not return")
	}
	checkEchoScenario(t, fp, log, 0)

	got, err := tbl.Get(ctx, "c", "n", nil)
	if err != nil {
		t.Fatal(err)
	}
	timesA, byB := got.N/1000, got.N%1000
	t.Logf("A: %v after %d calls of fn; stored %d (A's change %d times, B's %d)", errA, callsA.Load(), got.N, timesA, byB)
	if byB != int64(others) {
		t.Errorf("B's %d successful updates show %d times", others, byB)
	}
	switch {
	case timesA > 1:
		t.Errorf("A's change applied %d times (fn called %d times): a lost response made Update apply it again", timesA, callsA.Load())
	case timesA == 0:
		t.Errorf("A's change is not stored, though its replace landed")
	}
	if errA != nil && !errors.Is(errA, errOutcomeUnknown) {
		t.Errorf("A = %v, want nil or an error wrapping ErrOutcomeUnknown", errA)
	}
}

// Defect 2, statistical: 16 goroutines increment 3 counters through 10%
// injected faults (half after the service applied the request) with
// azcore's default retry options. Every Update that succeeded is stored
// once, and only those that reported ErrOutcomeUnknown may be stored
// besides: successes <= stored <= successes + unknowns per counter, and
// stored == successes when none was unknown. Other errors (azcore gave up
// on a read, say) must not have written anything.
func TestUpdateCountersUnderFaultsWithDefaultRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := faultSeed(t, 14)
	fp, err := faults.New(seed, faults.Transient(0.10)...)
	if err != nil {
		t.Fatal(err)
	}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		// azcore's default retry options: three retries, after about
		// 0.8 s, 2.4 s and 5.6 s.
		PerRetryPolicies: []policy.Policy{fp},
	}})
	tbl, err := patterns.NewTable[regressCounter](acct, testenv.TableName(t), &patterns.TableOptions{MaxAttempts: 100})
	if err != nil {
		t.Fatal(err)
	}
	fp.SetEnabled(false)
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const counters, writers, perWriter = 3, 16, 32
	for c := 0; c < counters; c++ {
		if err := tbl.Insert(ctx, &regressCounter{PartitionKey: "c", RowKey: fmt.Sprint(c)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	fp.SetEnabled(true)
	var mu sync.Mutex
	success, unknown, other := make([]int64, counters), make([]int64, counters), make([]int64, counters)
	var otherErrs []string
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				c := (w + i) % counters
				_, err := tbl.Update(ctx, "c", fmt.Sprint(c), func(v *regressCounter) error { v.N++; return nil }, nil)
				mu.Lock()
				switch {
				case err == nil:
					success[c]++
				case errors.Is(err, errOutcomeUnknown):
					unknown[c]++
				default:
					other[c]++
					otherErrs = append(otherErrs, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fp.SetEnabled(false)
	t.Logf("%d updates in %v, %d faults injected", writers*perWriter, time.Since(start).Round(time.Millisecond), fp.Injected())
	if fp.Injected() < 20 {
		t.Fatalf("only %d faults injected; the test proves nothing", fp.Injected())
	}
	for c := 0; c < counters; c++ {
		got, err := tbl.Get(ctx, "c", fmt.Sprint(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("counter %d: stored %d; %d successes, %d outcome unknown, %d other errors", c, got.N, success[c], unknown[c], other[c])
		switch {
		case got.N < success[c]:
			t.Errorf("counter %d: stored %d < %d successes: an increment reported done was lost", c, got.N, success[c])
		case got.N > success[c]+unknown[c]:
			t.Errorf("counter %d: stored %d > %d successes + %d outcome-unknown errors: %d increments applied twice or reported as failed", c, got.N, success[c], unknown[c], got.N-success[c]-unknown[c])
		}
	}
	if len(otherErrs) > 0 {
		t.Logf("other errors (must not have written): %s", strings.Join(otherErrs, "; "))
	}
}
