package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The benchService benchmarks put tablekit's emulator (impl=tablekit) beside
// Azurite (impl=azurite), each started by the benchmark, with the same
// client, the same concurrency and the same work: the raw aztables client
// for point reads and writes and for the page, tablekit's BulkWrite for
// the load. Sizes shrink with TABLEKIT_BENCH for a quick run (page-entities,
// azurite-page-entities, load-entities, azurite-load-entities: see
// benchutil); make bench uses the defaults.
const (
	pointConcurrency   = 16
	benchPartitionSize = 1000
)

// benchRow is a ~1 KiB entity: the size Azure's targets are given for.
type benchRow struct {
	PartitionKey, RowKey string
	Name, Email, Notes   string
	N                    int64
	Score                float64
	When                 time.Time
}

var filler = strings.Repeat("x", 900)

func newRow(i int) *benchRow {
	return &benchRow{
		PartitionKey: fmt.Sprintf("p%05d", i/benchPartitionSize),
		RowKey:       fmt.Sprintf("r%07d", i),
		Name:         "name " + strconv.Itoa(i), Email: "user" + strconv.Itoa(i) + "@example.com",
		Notes: filler[:900-len(strconv.Itoa(i))] + strconv.Itoa(i),
		N:     int64(i), Score: float64(i) / 3, When: time.Unix(int64(i), 0).UTC(),
	}
}

// benchService is one side: a connection string and how to stop it.
type benchService struct {
	name    string
	connStr string
	stop    func()
	dir     string // its location, if any
}

func startSides(b *testing.B) []benchService {
	b.Helper()
	testenv.Tier(b, testenv.TierAzurite)
	em, err := emulator.Start(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	az, err := azurite.Start(context.Background(), nil)
	if err != nil {
		em.Stop()
		b.Fatal(err)
	}
	b.Cleanup(func() { em.Stop(); az.Stop() })
	return []benchService{
		{name: "tablekit", connStr: em.ConnectionString},
		{name: "azurite", connStr: az.ConnectionString},
	}
}

func rawTable(b *testing.B, connStr, name string) *aztables.Client {
	b.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := svc.NewClient(name)
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	return c
}

// load writes n rows through tablekit's BulkWrite and returns the rate.
func load(b *testing.B, connStr, table string, n int) float64 {
	b.Helper()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := patterns.NewTable[benchRow](acct, table, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	rows := func(yield func(benchRow) bool) {
		for i := range n {
			if !yield(*newRow(i)) {
				return
			}
		}
	}
	start := time.Now()
	res, err := tbl.BulkWriteSeq(ctx, rows, nil)
	if err != nil {
		b.Fatalf("BulkWrite of %d rows: %v (%+v)", n, err, res)
	}
	return float64(n) / time.Since(start).Seconds()
}

// The point benchmarks measure the services, not a client: each request
// is pre-encoded and pre-signed (a table SAS in the URL, so nothing is
// signed per request), sent by net/http, and its answer's body discarded
// undecoded; 16 requests are in flight at once on both sides. The client
// shares the emulator's process and cores, and not Azurite's.

// sasClient is a table's SAS URL and an HTTP client for raw requests.
type sasClient struct {
	base, query string
	hc          *http.Client
}

func newSASClient(b *testing.B, connStr, table string) sasClient {
	b.Helper()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		b.Fatal(err)
	}
	sas, err := acct.TableSAS(table, tablekit.TableSASPermissions{Read: true, Add: true, Update: true}, time.Time{}, time.Now().Add(24*time.Hour), nil)
	if err != nil {
		b.Fatal(err)
	}
	return sasClient{base: sas.Endpoint + "/" + table, query: sas.Query(), hc: benchHTTPClient(b)}
}

// benchHTTPClient is an HTTP client with a transport of its own, enough
// idle connections kept for pointConcurrency requests in flight.
func benchHTTPClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// entityURL is the URL of entity (pk, rk), which must need no escaping.
func (c sasClient) entityURL(pk, rk string) string {
	return c.base + "(PartitionKey='" + pk + "',RowKey='" + rk + "')?" + c.query
}

// send sends one request as the SDKs do (JSON, no metadata). Its error
// names the URL without its query, which holds the SAS's signature.
func (c sasClient) send(method, u string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, redactedErr(method, u, err)
	}
	req.Header.Set("Accept", "application/json;odata=nometadata")
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("DataServiceVersion", "3.0")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, redactedErr(method, u, err)
	}
	return resp, nil
}

// redactedErr is err of a request to u, naming u without its query
// (net/http's *url.Error names the whole URL).
func redactedErr(method, u string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s %s: %w", method, withoutQuery(u), err)
}

// withoutQuery is u up to its query: what an error may name of a SAS URL.
func withoutQuery(u string) string {
	before, _, _ := strings.Cut(u, "?")
	return before
}

// do sends one request and discards its answer's body; a status other
// than want is an error.
func (c sasClient) do(method, u string, body []byte, want int) error {
	resp, err := c.send(method, u, body)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d", method, withoutQuery(u), resp.StatusCode, want)
	}
	return nil
}

// BenchmarkServicePointRead: point reads of one 1 KiB entity, 16 at once.
func BenchmarkServicePointRead(b *testing.B) {
	var rs []benchutil.Side
	for _, s := range startSides(b) {
		sc, _ := pointTable(b, s.connStr, "pointread")
		rs = append(rs, benchutil.S(s.name, pointDriver(b, sc, "read")))
	}
	benchutil.RunSides(b, rs...)
}

// BenchmarkServicePointWrite: upserts (insert-or-replace) of 1 KiB
// entities over 16 partitions, 16 at once.
func BenchmarkServicePointWrite(b *testing.B) {
	var rs []benchutil.Side
	for _, s := range startSides(b) {
		sc, _ := pointTable(b, s.connStr, "pointwrite")
		rs = append(rs, benchutil.S(s.name, pointDriver(b, sc, "write")))
	}
	benchutil.RunSides(b, rs...)
}

// pointTable creates table on the service at connStr with the entity the
// point reads get, and returns a SAS client for it and that entity's URL.
func pointTable(b *testing.B, connStr, table string) (sasClient, string) {
	b.Helper()
	c := rawTable(b, connStr, table)
	if _, err := c.UpsertEntity(context.Background(), mustJSON(b, newRow(1)), nil); err != nil {
		b.Fatal(err)
	}
	sc := newSASClient(b, connStr, table)
	return sc, sc.entityURL("p00000", "r0000001")
}

// pointWrite is one pre-encoded upsert: its URL and its body.
type pointWrite struct {
	url  string
	body []byte
}

// pointWrites are 4,096 upserts of 1 KiB entities over 16 partitions,
// encoded for sc.
func pointWrites(b *testing.B, sc sasClient) []pointWrite {
	b.Helper()
	writes := make([]pointWrite, 4096)
	for i := range writes {
		r := newRow(i)
		r.PartitionKey = "p" + strconv.Itoa(i%16)
		writes[i] = pointWrite{sc.entityURL(r.PartitionKey, r.RowKey), mustJSON(b, r)}
	}
	return writes
}

// pointDriver is the one driver of every point benchmark's sides: op
// "read" gets the entity pointTable wrote, op "write" cycles through
// pointWrites, 16 requests in flight, each answer's status checked and
// its body discarded.
func pointDriver(b *testing.B, sc sasClient, op string) func(b *testing.B) {
	b.Helper()
	u := sc.entityURL("p00000", "r0000001")
	var writes []pointWrite
	if op == "write" {
		writes = pointWrites(b, sc)
	}
	var next atomic.Int64
	return func(b *testing.B) {
		parallel(b, func() error {
			if op == "read" {
				return sc.do(http.MethodGet, u, nil, http.StatusOK)
			}
			w := writes[int(next.Add(1))%len(writes)]
			return sc.do(http.MethodPut, w.url, w.body, http.StatusNoContent)
		})
	}
}

// parallel runs op b.N times over pointConcurrency goroutines and reports
// requests per second and the process's CPU per request (cpu-µs/req: the
// client's, plus the service's when it runs in this process). CPU per
// request moves less than throughput when other work shares the cores.
func parallel(b *testing.B, op func() error) {
	b.SetParallelism((pointConcurrency + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	cpu := benchutil.StartCPU()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	cpu.Report(b, 1, "req")
}

// BenchmarkServicePage1M: one 1,000-entity page from the middle of a
// 1,000,000-entity table (a partition query), pre-signed and undecoded
// as in the point benchmarks. The table is loaded first through
// BulkWrite, which also gives the load rate and, on the emulator, its
// memory per entity.
func BenchmarkServicePage1M(b *testing.B) {
	sides := startSides(b)
	n := benchutil.Int(b, benchutil.KeyPageEntities, 1_000_000)
	var rs []benchutil.Side
	for _, s := range sides {
		size := n
		if s.name == "azurite" {
			size = benchutil.Int(b, benchutil.KeyAzuritePageEntities, n)
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rate := load(b, s.connStr, "page", size)
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.Logf("%s: loaded %d entities at %.0f entities/s", s.name, size, rate)
		if s.name == "tablekit" {
			b.Logf("emulator: %.0f bytes of Go heap per entity", float64(after.HeapAlloc-before.HeapAlloc)/float64(size))
		}
		sc := newSASClient(b, s.connStr, "page")
		pk := fmt.Sprintf("p%05d", size/benchPartitionSize/2)
		u := sc.base + "()?" + sc.query + "&$top=1000&$filter=" + url.QueryEscape("PartitionKey eq '"+pk+"'")
		// One page first, decoded, to check it holds 1,000 entities.
		if n := pageLen(b, sc, u); n != 1000 {
			b.Fatalf("%s: a page of %d entities, want 1000", s.name, n)
		}
		rs = append(rs, benchutil.S(s.name, func(b *testing.B) {
			for b.Loop() {
				if err := sc.do(http.MethodGet, u, nil, http.StatusOK); err != nil {
					b.Fatal(err)
				}
			}
		}))
	}
	benchutil.RunSides(b, rs...)
}

// pageLen reads the page at u and returns how many entities it holds.
func pageLen(b *testing.B, sc sasClient, u string) int {
	b.Helper()
	resp, err := sc.send(http.MethodGet, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		b.Fatalf("page at %s: status %d: %v", withoutQuery(u), resp.StatusCode, err)
	}
	return len(page.Value)
}

// BenchmarkServiceBulkLoad: entities per second that tablekit's BulkWrite
// (default options) loads into an empty table.
func BenchmarkServiceBulkLoad(b *testing.B) {
	sides := startSides(b)
	var rs []benchutil.Side
	for _, s := range sides {
		n := benchutil.Int(b, benchutil.KeyLoadEntities, 1_000_000)
		if s.name == "azurite" {
			n = benchutil.Int(b, benchutil.KeyAzuriteLoadEntities, 100_000)
		}
		round := 0
		rs = append(rs, benchutil.S(s.name, func(b *testing.B) {
			for b.Loop() {
				round++
				rate := load(b, s.connStr, "load"+strconv.Itoa(round), n)
				b.ReportMetric(rate, "entities/s")
			}
		}))
	}
	benchutil.RunSides(b, rs...)
}

// The Location benchmarks put the emulator in memory (impl=memory) beside
// the emulator with a location (impl=disk: every write on disk, fsync'd,
// before its answer) in one run: what persistence costs. They need no
// Azurite.

// locationSides starts both emulators.
func locationSides(b *testing.B) []benchService {
	b.Helper()
	mem := emulator.StartTB(b, nil)
	dir := b.TempDir()
	dur := emulator.StartTB(b, &emulator.Options{Location: dir})
	return []benchService{
		{name: "memory", connStr: mem.ConnectionString},
		{name: "disk", connStr: dur.ConnectionString, dir: dir},
	}
}

// BenchmarkLocationBulkLoad: entities per second that BulkWrite (default
// options) loads into an empty table, in memory and with a location; on
// disk also the database's bytes per entity.
func BenchmarkLocationBulkLoad(b *testing.B) {
	n := benchutil.Int(b, benchutil.KeyLoadEntities, 1_000_000)
	var rs []benchutil.Side
	for _, s := range locationSides(b) {
		round := 0
		rs = append(rs, benchutil.S(s.name, func(b *testing.B) {
			for b.Loop() {
				round++
				rate := load(b, s.connStr, "load"+strconv.Itoa(round), n)
				b.ReportMetric(rate, "entities/s")
			}
			if s.dir != "" {
				if fi, err := os.Stat(filepath.Join(s.dir, "tables.db")); err == nil {
					b.ReportMetric(float64(fi.Size())/float64(n*round), "file-B/entity")
				}
			}
		}))
	}
	benchutil.RunSides(b, rs...)
}

// BenchmarkLocationPoint: point reads and upserts of 1 KiB entities, 16
// at once, pre-encoded and pre-signed as in BenchmarkServicePointRead
// and BenchmarkServicePointWrite (the same driver), in memory, with a
// location, and against a ceiling (impl=ceiling): a bare net/http server
// on loopback that reads each request's body and sends back the memory
// side's answer to the same request, recorded once (status, headers,
// body). The ceiling is what this client and net/http on both ends cost
// on these cores; the rest of each side's time is the emulator's.
func BenchmarkLocationPoint(b *testing.B) {
	sides := locationSides(b)
	for _, op := range []string{"read", "write"} {
		b.Run("op="+op, func(b *testing.B) {
			var rs []benchutil.Side
			var ceiling sasClient
			for _, s := range sides {
				sc, u := pointTable(b, s.connStr, "point"+op)
				if s.name == "memory" {
					method, body := http.MethodGet, []byte(nil)
					if op == "write" {
						w := pointWrites(b, sc)[0]
						method, u, body = http.MethodPut, w.url, w.body
					}
					ceiling = ceilingClient(b, sc, recordAnswer(b, sc, method, u, body))
				}
				rs = append(rs, benchutil.S(s.name, pointDriver(b, sc, op)))
			}
			rs = append(rs, benchutil.S("ceiling", pointDriver(b, ceiling, op)))
			benchutil.RunSides(b, rs...)
		})
	}
}

// cannedAnswer is one recorded answer of the emulator: what the ceiling
// sends back to every request.
type cannedAnswer struct {
	status int
	header http.Header
	body   []byte
}

// recordAnswer sends one request through sc and records its answer.
func recordAnswer(b *testing.B, sc sasClient, method, u string, body []byte) cannedAnswer {
	b.Helper()
	resp, err := sc.send(method, u, body)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("%s %s: reading the answer: %v", method, withoutQuery(u), err)
	}
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s %s: status %d: %s", method, withoutQuery(u), resp.StatusCode, got)
	}
	b.Logf("the ceiling answers %s with %d, %d bytes, headers %v", method, resp.StatusCode, len(got), resp.Header)
	return cannedAnswer{status: resp.StatusCode, header: resp.Header.Clone(), body: got}
}

// ceilingClient starts a bare net/http server on loopback that reads
// every request's body and sends ans back, and returns sc aimed at it:
// the same paths and queries (SAS included), another host.
func ceilingClient(b *testing.B, sc sasClient, ans cannedAnswer) sasClient {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		for k, v := range ans.header {
			h[k] = v
		}
		w.WriteHeader(ans.status)
		_, _ = w.Write(ans.body)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	base, err := url.Parse(sc.base)
	if err != nil {
		b.Fatal(err)
	}
	base.Host = ln.Addr().String()
	return sasClient{base: base.String(), query: sc.query, hc: benchHTTPClient(b)}
}

// The benchmarks' client names no SAS signature in its errors: net/http's
// own error names the whole URL, query included.
func TestBenchClientErrorsNameNoSignature(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the request fails
	sc := sasClient{base: "http://" + addr + "/devstoreaccount1/t", query: "sv=2019-02-02&sig=SECRETSIG", hc: &http.Client{}}
	err = sc.do(http.MethodGet, sc.entityURL("p", "r"), nil, http.StatusOK)
	if err == nil {
		t.Fatal("a request to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "SECRETSIG") || !strings.Contains(err.Error(), "/devstoreaccount1/t(PartitionKey='p',RowKey='r')") {
		t.Errorf("error %q: want the URL's path and not its signature", err)
	}
}
