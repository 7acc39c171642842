package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Result is what a replay found.
type Result struct {
	Recording string
	Exchanges []Exchange
}

// Exchange is one replayed exchange and its differences from the
// recording; none means it matches.
type Exchange struct {
	// Index is the entry's position in the recording, from 0.
	Index int
	// Method and URI are the recorded request's.
	Method, URI string
	// Service is the service the request went to: "table", "queue" or
	// "blob".
	Service string
	Diffs   []string
}

// Matched is the number of exchanges without differences.
func (r *Result) Matched() int {
	n := 0
	for _, x := range r.Exchanges {
		if len(x.Diffs) == 0 {
			n++
		}
	}
	return n
}

// String is the result as "N of M exchanges match" and the differences,
// one a line.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d exchanges match", r.Recording, r.Matched(), len(r.Exchanges))
	for _, x := range r.Exchanges {
		for _, d := range x.Diffs {
			fmt.Fprintf(&b, "\n  #%d %s %s: %s", x.Index, x.Method, x.URI, d)
		}
	}
	return b.String()
}

// Run replays rec against t: each recorded request in order, each answer
// compared with the recorded one. A request that cannot be sent is a
// difference of its exchange, and the replay goes on; only ctx's end
// stops it early, with ctx's error.
func Run(ctx context.Context, t *Target, rec *Recording) (*Result, error) {
	client := t.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{DisableCompression: true}}
	}
	mem := newMemory()
	res := &Result{Recording: rec.Name}
	if err := setup(ctx, client, t, rec); err != nil {
		return res, err
	}
	var last time.Time // the previous request's recorded x-ms-date
	for i := range rec.Entries {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		e := &rec.Entries[i]
		last = t.wait(e, last)
		x := Exchange{Index: i, Method: e.RequestMethod, URI: e.RequestURI}
		if svc, _, err := split(e.RequestURI); err == nil {
			x.Service = [...]string{tableService: "table", queueService: "queue", blobService: "blob"}[svc]
		}
		d := &differ{t: t, mem: mem}
		if err := exchange(ctx, client, t, e, d); err != nil {
			d.addf("%v", err)
		}
		x.Diffs = d.diffs
		res.Exchanges = append(res.Exchanges, x)
	}
	return res, nil
}

// setup creates the resources rec's test made before its recording
// began (a container, a queue, a table, each named by its URI), with the
// version its first request sent.
func setup(ctx context.Context, client *http.Client, t *Target, rec *Recording) error {
	version, _ := rec.Entries[0].header("x-ms-version")
	for _, uri := range rec.Setup {
		e := &Entry{RequestMethod: http.MethodPut, RequestURI: uri, RequestHeaders: map[string]string{"x-ms-version": version}}
		svc, rest, err := split(uri)
		if err != nil {
			return fmt.Errorf("setup %s: %w", uri, err)
		}
		switch svc {
		case blobService:
			e.RequestURI += "?restype=container"
		case tableService:
			e.RequestMethod = http.MethodPost
			e.RequestURI = strings.TrimSuffix(uri, rest) + "/Tables"
			e.RequestHeaders["Content-Type"] = "application/json"
			e.RequestHeaders["Accept"] = "application/json;odata=nometadata"
			body, _ := json.Marshal(map[string]string{"TableName": strings.TrimPrefix(rest, "/")})
			e.RequestBody, _ = EncodeBody(body, "application/json")
		}
		req, err := t.request(e, newMemory())
		if err != nil {
			return fmt.Errorf("setup %s: %w", uri, err)
		}
		resp, err := client.Do(req.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("setup %s: %w", uri, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("setup %s: %s", uri, resp.Status)
		}
	}
	return nil
}

// wait passes on the target's clock the time the recorded session
// waited before e: the distance between e's recorded x-ms-date and the
// previous request's, last. It returns e's recorded time (last again when
// e has none).
func (t *Target) wait(e *Entry, last time.Time) time.Time {
	v, ok := e.header("x-ms-date")
	if !ok {
		return last
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return last
	}
	if d := at.Sub(last); t.Advance != nil && !last.IsZero() && d > 0 {
		t.Advance(d)
	}
	return at
}

// exchange sends one recorded request and compares the answer.
func exchange(ctx context.Context, client *http.Client, t *Target, e *Entry, d *differ) error {
	req, err := t.request(e, d.mem)
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("sending the request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	d.response(e, resp.StatusCode, resp.Header, body)
	return nil
}
