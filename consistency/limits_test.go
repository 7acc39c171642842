package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/tools/testenv"
)

// wideEntity is the JSON of an entity with n custom properties.
func wideEntity(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"PartitionKey":"p","RowKey":"wide"`)
	for i := range n {
		b.WriteString(`,"P` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
	}
	b.WriteString("}")
	return []byte(b.String())
}

func jsonOf(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // fixtures of this file: maps of strings and bytes
	}
	return b
}

// overLimits are upsert steps that Azure rejects and Azurite accepts (or
// that break a rule Azure enforces): property is what the error must name.
func overLimits() map[string]struct {
	body     []byte
	property string
} {
	long := strings.Repeat("x", 40_000)
	return map[string]struct {
		body     []byte
		property string
	}{
		"253 properties":     {wideEntity(253), "253 custom properties"},
		"40,000 characters":  {[]byte(`{"PartitionKey":"p","RowKey":"r","Big":"` + long + `"}`), "Big"},
		"property bad name":  {[]byte(`{"PartitionKey":"p","RowKey":"r","bad name":1}`), "bad name"},
		"binary over 64 KiB": {jsonOf(map[string]any{"PartitionKey": "p", "RowKey": "r", "Blob": make([]byte, 64*1024+1), "Blob@odata.type": "Edm.Binary"}), "Blob"},
		"entity over 1 MiB": {func() []byte {
			m := map[string]any{"PartitionKey": "p", "RowKey": "r"}
			for i := range 20 {
				m["S"+strconv.Itoa(i)] = strings.Repeat("y", 30_000)
			}
			return jsonOf(m)
		}(), "1 MiB"},
	}
}

// Defect 5: Enqueue refused none of these; it must refuse each with a
// typed error naming the step and the property, before any request.
func TestEnqueueRefusesEntitiesAzureRejects(t *testing.T) {
	acct, counter := testenv.CountingAccount(t)
	q := newQueue(t, acct)
	ctx := context.Background()
	for name, c := range overLimits() {
		t.Run(name, func(t *testing.T) {
			counter.Reset()
			tx := NewTransaction(
				DeleteEntity(EntityRef{"Current", "p", "r"}),
				UpsertEntity("Current", c.body, tablekit.UpsertReplace),
			)
			err := q.Enqueue(ctx, tx, nil)
			if n := counter.Count(); n != 0 {
				t.Errorf("Enqueue sent %d requests:\n%s", n, counter.Requests())
			}
			var se *StepError
			if !errors.As(err, &se) || se.Index != 1 || se.Kind != KindUpsertEntity {
				t.Fatalf("Enqueue = %v, want a *StepError for step 1 (upsert-entity)", err)
			}
			if !errors.Is(err, tablekit.ErrInvalidEntity) || !errors.Is(err, ErrInvalidArgs) || !IsPermanent(err) {
				t.Errorf("Enqueue = %v, want it to wrap tablekit.ErrInvalidEntity and ErrInvalidArgs", err)
			}
			var ee *entity.Error
			if !errors.As(err, &ee) {
				t.Errorf("Enqueue = %v, want an *entity.Error inside", err)
			}
			if !strings.Contains(err.Error(), "step 1") || !strings.Contains(err.Error(), c.property) {
				t.Errorf("Enqueue = %v, want it to name step 1 and %q", err, c.property)
			}
		})
	}
	if n := messageCount(t, q.qc); n != 0 {
		t.Fatalf("%d messages on the queue, want none", n)
	}
}

// badBlobSteps are steps whose blob container or name must not reach the
// service.
func badBlobSteps() map[string]Step {
	src := EntityRef{"Current", "p", "r"}
	return map[string]Step{
		"put ..":                 PutBlob("photos", "..", []byte("x"), ""),
		"put traversal":          PutBlob("photos", "../../x?comp=list", []byte("x"), ""),
		"put inner ..":           PutBlob("photos", "a/../../b", []byte("x"), ""),
		"delete .":               DeleteBlob("photos", "."),
		"delete query":           DeleteBlob("photos", "x?comp=list"),
		"delete control":         DeleteBlob("photos", "a\x00b"),
		"cleanup traversal":      BlobCleanup("photos", "../../x?comp=list", src, "Photo"),
		"cleanup container ..":   BlobCleanup("..", "x", src, "Photo"),
		"put container slash":    PutBlob("a/b", "x", nil, ""),
		"delete name too long":   DeleteBlob("photos", strings.Repeat("n", 1025)),
		"put trailing slash":     PutBlob("photos", "dir/", nil, ""),
		"put container too long": PutBlob(strings.Repeat("c", 64), "x", nil, ""),
		"put backslash":          PutBlob("photos", `a\..\b`, nil, ""),
	}
}

// Defect 5: blob names taken from messages are validated at Enqueue.
func TestEnqueueRefusesBadBlobNames(t *testing.T) {
	acct, counter := testenv.CountingAccount(t)
	q := newQueue(t, acct)
	ctx := context.Background()
	for name, step := range badBlobSteps() {
		t.Run(name, func(t *testing.T) {
			counter.Reset()
			err := q.Enqueue(ctx, NewTransaction(DeleteEntity(EntityRef{"Current", "p", "r"}), step), nil)
			if n := counter.Count(); n != 0 {
				t.Errorf("Enqueue sent %d requests:\n%s", n, counter.Requests())
			}
			var se *StepError
			if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, ErrInvalidArgs) || !errors.Is(err, keys.ErrInvalidName) {
				t.Fatalf("Enqueue = %v, want a *StepError for step 1 wrapping ErrInvalidArgs and keys.ErrInvalidName", err)
			}
		})
	}
	// Names the service accepts still pass.
	for _, n := range []string{"a", "tx/0123.json", "Tbl/p/r/Photo.ab12", "Tbl//r/Photo.ab12", "a.b/c..d/e.", "é/ü"} {
		if err := ValidateSteps(NewTransaction(PutBlob("photos", n, nil, ""))); err != nil {
			t.Errorf("blob name %q refused: %v", n, err)
		}
	}
}

// urlLog records the URL of every request.
type urlLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *urlLog) Do(req *policy.Request) (*http.Response, error) {
	l.mu.Lock()
	l.urls = append(l.urls, req.Raw().Method+" "+req.Raw().URL.String())
	l.mu.Unlock()
	return req.Next()
}

// matching returns the recorded requests whose URL contains one of
// substrs or ends with one of suffixes.
func (l *urlLog) matching(substrs, suffixes []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.urls {
		for _, s := range substrs {
			if strings.Contains(u, s) {
				out = append(out, u)
				break
			}
		}
		for _, s := range suffixes {
			if strings.HasSuffix(u, s) {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// rawEnqueue puts text on the queue as it is, bypassing Enqueue's checks.
func rawEnqueue(t *testing.T, q *Queue, text string) {
	t.Helper()
	if _, err := q.qc.EnqueueMessage(context.Background(), text, nil); err != nil {
		t.Fatal(err)
	}
}

// Defect 5: the worker applied a raw message whose upsert step has 300
// properties (Azurite stores it; Azure would reject it). It must poison
// it as permanent before applying any step of the transaction.
func TestWorkerPoisonsAnEntityOverTheLimits(t *testing.T) {
	ctx, acct, q := queueEnv(t)
	table := createTable(t, acct)
	env := `{"v":1,"id":"wide","steps":[` +
		`{"kind":"upsert-entity","args":{"table":"` + table + `","entity":{"PartitionKey":"p","RowKey":"first","A":1}}},` +
		`{"kind":"upsert-entity","args":{"table":"` + table + `","entity":` + string(wideEntity(300)) + `}}]}`
	rawEnqueue(t, q, env)
	w := newWorker(t, acct, q, WorkerOptions{MaxDequeueCount: 3})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "the transaction to be settled", func() bool {
		return w.Metrics().Poisoned()+w.Metrics().Processed() >= 1
	})
	stop()
	if got := listAll(t, acct, table); len(got) != 0 {
		t.Errorf("the worker wrote %d entities, want none: %v", len(got), keysOf(got))
	}
	recs, err := q.Poisoned(ctx, 10, nil)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Poisoned = %d records, %v; want 1", len(recs), err)
	}
	r := recs[0]
	if !r.Permanent || r.DequeueCount != 1 || r.Step != 1 || r.Kind != KindUpsertEntity || r.TxID != "wide" ||
		!strings.Contains(r.Error, "300 custom properties") {
		t.Fatalf("poison record %+v, want a permanent failure of step 1 on its first delivery naming 300 properties", r)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Defect 5: blob containers and names from raw messages (a step's
// arguments, or the envelope's blob reference) never reach the service.
func TestWorkerRefusesBadBlobNamesBeforeAnyRequest(t *testing.T) {
	log := &urlLog{}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{log}}})
	ctx := context.Background()
	q := newQueue(t, acct)
	cont := q.container
	msgs := []string{
		`{"v":1,"id":"ref1","blob":{"container":"..","name":"x"}}`,
		`{"v":1,"id":"ref2","blob":{"container":"` + cont + `","name":"../../x?comp=list"}}`,
	}
	for i, s := range []Step{
		PutBlob(cont, "../../x?comp=list", []byte("x"), ""),
		DeleteBlob(cont, ".."),
		BlobCleanup(cont, "../../x?comp=list", EntityRef{"Current", "p", "r"}, "Photo"),
	} {
		body, err := json.Marshal(envelope{V: Version, ID: "step" + strconv.Itoa(i), Steps: []Step{PutBlob(cont, "fine", []byte("ok"), ""), s}})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, string(body))
	}
	for _, m := range msgs {
		rawEnqueue(t, q, m)
	}
	w := newWorker(t, acct, q, WorkerOptions{MaxDequeueCount: 3})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "every message to be settled", func() bool {
		return w.Metrics().Poisoned()+w.Metrics().Processed() >= int64(len(msgs))
	})
	stop()
	if bad := log.matching([]string{"/../", "/./", "%3Fcomp", "/fine"}, []string{"/..", "/."}); len(bad) > 0 {
		t.Errorf("requests that must not have been sent:\n%s", strings.Join(bad, "\n"))
	}
	if p := w.Metrics().Poisoned(); p != int64(len(msgs)) {
		t.Errorf("poisoned %d of %d messages", p, len(msgs))
	}
	recs, err := q.Poisoned(ctx, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if !r.Permanent || r.DequeueCount != 1 {
			t.Errorf("poison record %s: permanent %v after %d deliveries, want permanent on the first", r.TxID, r.Permanent, r.DequeueCount)
		}
	}
}

// Apply checks the whole transaction before its first step: an invalid
// step applies none (it used to apply the steps before it). A built-in
// kind replaced with Handle is left to its handler's own checks.
func TestApplyValidatesEveryStepFirst(t *testing.T) {
	ctx := context.Background()
	reg := NewRegistry()
	var ran []string
	reg.Handle("count", func(ctx context.Context, c *Call) error {
		ran = append(ran, c.Kind)
		return nil
	})
	bad := NewTransaction(NewStep("count", nil), UpsertEntity("Current", []byte(`{"PartitionKey":"p","RowKey":"r","bad name":1}`), tablekit.UpsertReplace))
	err := Apply(ctx, nil, bad, reg, nil)
	var se *StepError
	if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, tablekit.ErrInvalidEntity) || len(ran) != 0 {
		t.Fatalf("Apply = %v after running %v, want a StepError at 1 wrapping ErrInvalidEntity and no step run", err, ran)
	}
	reg.Handle(KindUpsertEntity, func(ctx context.Context, c *Call) error {
		ran = append(ran, c.Kind)
		return nil
	})
	custom := NewTransaction(NewStep(KindUpsertEntity, map[string]int{"mine": 1}))
	if err := Apply(ctx, nil, custom, reg, nil); err != nil || len(ran) != 1 {
		t.Fatalf("Apply with a replaced built-in = %v (ran %v), want the custom handler to run", err, ran)
	}
	if err := Apply(ctx, nil, custom, nil, nil); !errors.Is(err, ErrInvalidArgs) {
		t.Fatalf("Apply with the built-ins = %v, want ErrInvalidArgs", err)
	}
}

// Steps that write a property named in their arguments (copy-props'
// targets, index-list's list) have the name checked at Enqueue too.
func TestEnqueueRefusesPropertyNamesAzureRejects(t *testing.T) {
	src, dst := EntityRef{"Employees", "Sales", "1"}, EntityRef{"Depts", "Sales", "d"}
	for name, step := range map[string]Step{
		"copy-props target": CopyProps(src, dst, map[string]string{"Phone": "manager phone"}),
		"index-list list": IndexList(IndexListArgs{Index: dst, Property: "Member-IDs", Member: "1",
			Source: src, Where: "Dept", Equals: json.RawMessage(`"Sales"`)}),
	} {
		err := ValidateSteps(NewTransaction(step))
		var ee *entity.Error
		if !errors.Is(err, ErrInvalidArgs) || !errors.Is(err, tablekit.ErrInvalidEntity) || !errors.As(err, &ee) || ee.Field == "" {
			t.Errorf("%s: ValidateSteps = %v, want ErrInvalidArgs and an *entity.Error naming the property", name, err)
		}
	}
}
