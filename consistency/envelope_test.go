package consistency

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/buildinfo"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	tx := NewTransaction(
		MoveEntity(EntityRef{"Current", "Sales", "1"}, EntityRef{Table: "Archive"}),
		DeleteBlob("photos", "a/b.jpg"),
		NewStep("custom", map[string]int{"n": 1}),
	)
	b, err := json.Marshal(tx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"v":1,"id":"`+tx.ID+`","steps":[{"kind":"move-entity","args":{"from":{"table":"Current"`) {
		t.Fatalf("envelope: %s", b)
	}
	var back Transaction
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != tx.ID || len(back.Steps) != 3 || back.Steps[2].Kind != "custom" || string(back.Steps[2].Args) != `{"n":1}` {
		t.Fatalf("round trip: %+v", back)
	}
}

func TestEnvelopeRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `hello`,
		"version 2":       `{"v":2,"id":"a","steps":[{"kind":"k"}]}`,
		"no version":      `{"id":"a","steps":[{"kind":"k"}]}`,
		"unknown field":   `{"v":1,"id":"a","steps":[{"kind":"k"}],"extra":1}`,
		"no id":           `{"v":1,"steps":[{"kind":"k"}]}`,
		"bad id":          `{"v":1,"id":"a/b","steps":[{"kind":"k"}]}`,
		"no steps":        `{"v":1,"id":"a","steps":[]}`,
		"no kind":         `{"v":1,"id":"a","steps":[{"args":{}}]}`,
		"args not object": `{"v":1,"id":"a","steps":[{"kind":"k","args":[1]}]}`,
		"trailing":        `{"v":1,"id":"a","steps":[{"kind":"k"}]} {}`,
		"blob and steps":  `{"v":1,"id":"a","steps":[{"kind":"k"}],"blob":{"container":"c","name":"n"}}`,
	} {
		_, err := ParseTransaction([]byte(in), false)
		if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrPermanent) {
			t.Errorf("%s: err = %v, want ErrMalformed and ErrPermanent", name, err)
		}
	}
	tx, err := ParseTransaction([]byte(`{"v":1,"steps":[{"kind":"k"}]}`), true)
	if err != nil || len(tx.ID) != 32 {
		t.Fatalf("allowNoID: %v %v", tx, err)
	}
}

func TestStepErrorsSurfaceAtValidation(t *testing.T) {
	tx := NewTransaction(DeleteBlob("ccc", "n"), NewStep("custom", func() {}))
	err := tx.Validate()
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "step 1 (custom)") {
		t.Fatalf("err = %v, want a malformed step 1", err)
	}
	for name, c := range map[string]struct {
		step  Step
		field string
	}{
		"table name":   {DeleteEntity(EntityRef{"no-dash", "p", "r"}), "table"},
		"key":          {DeleteEntity(EntityRef{"Tab1", "a/b", "r"}), "pk"},
		"move to self": {MoveEntity(EntityRef{"Tab1", "p", "r"}, EntityRef{Table: "Tab1"}), "same entity"},
		"upsert keys":  {UpsertEntity("Tab1", []byte(`{"PartitionKey":"p"}`), tablekit.UpsertReplace), "PartitionKey and RowKey"},
		"upsert mode":  {NewStep(KindUpsertEntity, map[string]any{"table": "Tab1", "entity": map[string]string{"PartitionKey": "p", "RowKey": "r"}, "mode": "insert"}), "mode"},
		"container":    {DeleteBlob("C", "n"), "container"},
		"sync prop":    {SyncCopies(EntityRef{"Tab1", "p", "r"}, ""), "property"},
		"index equals": {IndexList(IndexListArgs{Index: EntityRef{"Tab1", "p", "r"}, Source: EntityRef{"Tab2", "p", "r"}, Property: "M", Member: "m", Where: "D"}), "equals"},
		"unknown arg":  {NewStep(KindDeleteEntity, map[string]string{"table": "Tab1", "pk": "p", "rk": "r", "etag": "x"}), "unknown field"},
	} {
		tx := NewTransaction(DeleteBlob("ccc", "n"), c.step)
		err := ValidateSteps(tx)
		var se *StepError
		if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, ErrInvalidArgs) || !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v, want a StepError at 1 wrapping ErrInvalidArgs naming %q", name, err, c.field)
		}
	}
}

func TestIsPermanent(t *testing.T) {
	resp := func(code int) error {
		return tablekit.MapError(&azcore.ResponseError{StatusCode: code, ErrorCode: "X"}, "op", "r")
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{resp(500), false},
		{resp(503), false},
		{resp(408), false},
		{resp(429), false},
		{resp(412), false},
		{resp(404), true},
		{resp(400), true},
		{resp(403), true},
		{context.DeadlineExceeded, false},
		{errors.New("unclassified"), false},
		{Permanent(resp(503)), true},
		{Retryable(resp(400)), false},
		{fmt.Errorf("wrapped: %w", ErrUnknownStep), true},
		{malformed("x", nil), true},
	} {
		if got := IsPermanent(c.err); got != c.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestBackoffSchedule(t *testing.T) {
	b := Backoff{Delays: []time.Duration{2 * time.Second, 4 * time.Second, 10 * time.Second, 30 * time.Second}}
	for attempt, want := range map[int64]time.Duration{0: 2 * time.Second, 1: 2 * time.Second, 2: 4 * time.Second, 3: 10 * time.Second, 4: 30 * time.Second, 9: 30 * time.Second} {
		if got := b.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want)
		}
	}
	distinct := map[time.Duration]bool{}
	for range 200 {
		d := DefaultBackoff.Delay(4)
		if d < 24*time.Second || d > 36*time.Second {
			t.Fatalf("jittered 30 s delay %v outside ±20%%", d)
		}
		distinct[d] = true
	}
	if len(distinct) < 50 {
		t.Fatalf("jitter gave only %d distinct delays", len(distinct))
	}
	if seconds(1500*time.Millisecond) != 2 || seconds(0) != 0 || seconds(30*24*time.Hour) != 7*24*3600 {
		t.Fatal("seconds rounding")
	}
}

func TestMetricsEndpoint(t *testing.T) {
	m := &Metrics{}
	m.processed.Add(3)
	m.poisoned.Add(1)
	m.apply.observe(30 * time.Millisecond)
	m.apply.observe(2 * time.Second)
	healthy := true
	srv := httptest.NewServer(metricsHandler(m, func() (bool, string) { return healthy, "draining" }))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, "")
		buf := make([]byte, 1<<16)
		n, _ := resp.Body.Read(buf)
		return resp.StatusCode, string(buf[:n])
	}
	code, body := get("/metrics")
	for _, want := range []string{
		`tablekit_worker_build_info{version="` + buildinfo.Version() + `"} 1` + "\n",
		"tablekit_worker_processed_total 3\n",
		"tablekit_worker_poisoned_total 1\n",
		"tablekit_worker_retried_total 0\n",
		"# TYPE tablekit_worker_in_flight gauge\n",
		`tablekit_worker_apply_seconds_bucket{le="0.05"} 1` + "\n",
		`tablekit_worker_apply_seconds_bucket{le="2.5"} 2` + "\n",
		`tablekit_worker_apply_seconds_bucket{le="+Inf"} 2` + "\n",
		"tablekit_worker_apply_seconds_count 2\n",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q:\n%s", code, want, body)
		}
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	healthy = false
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "draining") {
		t.Errorf("unhealthy /healthz = %d %q", code, body)
	}
}

// TestDecodeMessageBase64: a message is a JSON envelope or one encoded in
// base64 (as Azure Functions writes them); anything else is malformed.
func TestDecodeMessageBase64(t *testing.T) {
	const env = `{"v":1,"id":"a","steps":[{"kind":"k"}],"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`
	for name, text := range map[string]string{
		"json":           env,
		"base64":         base64.StdEncoding.EncodeToString([]byte(env)),
		"base64 newline": base64.StdEncoding.EncodeToString([]byte(env)) + "\n",
	} {
		e, err := decodeMessage(text)
		if err != nil || e.ID != "a" || len(e.Steps) != 1 || e.TraceParent == "" {
			t.Errorf("%s: %+v %v", name, e, err)
		}
	}
	for name, text := range map[string]string{
		"base64 of text":  base64.StdEncoding.EncodeToString([]byte("hello")),
		"not base64":      "hello!",
		"base64 of v2":    base64.StdEncoding.EncodeToString([]byte(`{"v":2,"id":"a","steps":[{"kind":"k"}]}`)),
		"unknown field":   base64.StdEncoding.EncodeToString([]byte(`{"v":1,"id":"a","steps":[{"kind":"k"}],"x":1}`)),
		"url-safe base64": strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(`{"v":1,"id":"a?>","steps":[{"kind":"k"}]}`)), "="),
	} {
		if _, err := decodeMessage(text); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}
