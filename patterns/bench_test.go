package patterns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The raw side of each benchmark is what a competent Go developer writes
// over aztables: JSON-tagged structs with encoding/json, Int64 as an
// annotated string, SubmitTransaction in 100-entity chunks, the pager.

type benchEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
	FirstName    string
	LastName     string
	Email        string
	Department   string
	Age          int32
	Salary       int64
	Rating       float64
	Active       bool
	Hired        time.Time
}

type rawEmployee struct {
	PartitionKey string    `json:"PartitionKey"`
	RowKey       string    `json:"RowKey"`
	Timestamp    time.Time `json:"Timestamp,omitempty"`
	FirstName    string    `json:"FirstName"`
	LastName     string    `json:"LastName"`
	Email        string    `json:"Email"`
	Department   string    `json:"Department"`
	Age          int32     `json:"Age"`
	Salary       int64     `json:"Salary,string"`
	SalaryType   string    `json:"Salary@odata.type"`
	Rating       float64   `json:"Rating"`
	RatingType   string    `json:"Rating@odata.type"`
	Active       bool      `json:"Active"`
	Hired        time.Time `json:"Hired"`
	HiredType    string    `json:"Hired@odata.type"`
}

func benchRow(pk string, i int) benchEmployee {
	return benchEmployee{
		PartitionKey: pk, RowKey: fmt.Sprintf("%08d", i),
		FirstName: "Jun" + strconv.Itoa(i), LastName: "Cao", Email: "junc" + strconv.Itoa(i) + "@contoso.com",
		Department: pk, Age: 31, Salary: 1<<40 + int64(i), Rating: 4.5, Active: i%2 == 0,
		Hired: time.Date(2014, 8, 22, 0, 50, 32, 0, time.UTC),
	}
}

func rawRow(pk string, i int) rawEmployee {
	e := benchRow(pk, i)
	return rawEmployee{
		PartitionKey: e.PartitionKey, RowKey: e.RowKey, FirstName: e.FirstName, LastName: e.LastName,
		Email: e.Email, Department: e.Department, Age: e.Age, Salary: e.Salary, SalaryType: "Edm.Int64",
		Rating: e.Rating, RatingType: "Edm.Double", Active: e.Active, Hired: e.Hired, HiredType: "Edm.DateTime",
	}
}

func benchTable(b *testing.B) (*patterns.Table[benchEmployee], *aztables.Client) {
	b.Helper()
	acct := testenv.Account(b)
	tbl, err := patterns.NewTable[benchEmployee](acct, testenv.TableName(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	return tbl, tbl.Client()
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	tbl, raw := benchTable(b)
	row := benchRow("Sales", 1)
	if err := tbl.Insert(ctx, &row, nil); err != nil {
		b.Fatal(err)
	}
	ceil := newCeiling(b)
	getURL := ceil.endpoint + "/" + tbl.Name() + "(PartitionKey='Sales',RowKey='" + row.RowKey + "')"
	getPath := "/" + tbl.Name() + "(PartitionKey='Sales',RowKey='" + row.RowKey + "')"
	ceilingGet := func(h http.Header) error {
		return ceil.send(ctx, http.MethodGet, getURL, h, nil, http.StatusOK, func(_ *http.Response, body []byte) error {
			if len(body) == 0 {
				return errors.New("ceiling: empty entity")
			}
			return nil
		})
	}
	warmUp(b, warmTime,
		func() error { _, err := tbl.Get(ctx, "Sales", row.RowKey, nil); return err },
		func() error { _, err := raw.GetEntity(ctx, "Sales", row.RowKey, nil); return err },
		func() error { return ceilingGet(ceil.signed(getPath)) })
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				if _, err := tbl.Get(ctx, "Sales", row.RowKey, nil); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, 1)
		}),
		benchutil.S("raw", func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				resp, err := raw.GetEntity(ctx, "Sales", row.RowKey, nil)
				if err != nil {
					b.Fatal(err)
				}
				var e rawEmployee
				if err := json.Unmarshal(resp.Value, &e); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, 1)
		}),
		benchutil.S("ceiling", func(b *testing.B) {
			h := ceil.signed(getPath)
			cpu := startCPU()
			for b.Loop() {
				if err := ceilingGet(h); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, 1)
		}))
}

var benchSeq atomic.Int64

// warmUp runs the operations, alternating, for d before a comparison is
// measured: go test runs each side's -count repetitions in a row, and
// without it the side measured first pays for a cold emulator (Azurite's
// JIT), which made the first side look 20% slower.
func warmUp(b *testing.B, d time.Duration, ops ...func() error) {
	b.Helper()
	for start := time.Now(); time.Since(start) < d; {
		for _, op := range ops {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// warmTime is how long each comparison warms the emulator up.
const warmTime = 3 * time.Second

// BenchmarkBulkWrite upserts the same 1,000 entities over 10 partitions
// per op on every side (the table stays at 1,000 entities, so no side
// pays for a larger one). BulkWrite keeps 8 transactions in flight; so do
// the raw side and the ceiling. raw-sequential is the loop a developer
// writes first, raw-single one UpsertEntity per entity.
func BenchmarkBulkWrite(b *testing.B) {
	ctx := context.Background()
	tbl, raw := benchTable(b)
	const n, parts, conc = 1000, 10, 8
	items := make([]benchEmployee, n)
	for i := range items {
		items[i] = benchRow("p"+strconv.Itoa(i%parts), i)
	}
	// rawChunks is the raw developer's encoding: JSON-tagged structs,
	// grouped by partition, 100-entity transactions.
	rawChunks := func(b *testing.B) [][]aztables.TransactionAction {
		byPart := map[string][]aztables.TransactionAction{}
		for i := 0; i < n; i++ {
			e := rawRow("p"+strconv.Itoa(i%parts), i)
			body, err := json.Marshal(e)
			if err != nil {
				b.Fatal(err)
			}
			byPart[e.PartitionKey] = append(byPart[e.PartitionKey], aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: body})
		}
		var chunks [][]aztables.TransactionAction
		for _, actions := range byPart {
			for len(actions) > 0 {
				chunk := actions[:min(100, len(actions))]
				actions = actions[len(chunk):]
				chunks = append(chunks, chunk)
			}
		}
		return chunks
	}
	ceil := newCeiling(b)
	var bodies [][]byte
	var contentType string
	{
		byPart := map[string][]int{}
		for i, it := range items {
			byPart[it.PartitionKey] = append(byPart[it.PartitionKey], i)
		}
		codec, err := entity.CodecOf(reflect.TypeOf(benchEmployee{}), nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, idx := range byPart {
			var ents [][]byte
			var ks [][2]string
			for _, i := range idx {
				e, err := codec.Marshal(&items[i])
				if err != nil {
					b.Fatal(err)
				}
				ents = append(ents, e)
				ks = append(ks, [2]string{items[i].PartitionKey, items[i].RowKey})
			}
			var body []byte
			body, contentType = ceil.batchBody(tbl.Name(), ents, ks)
			bodies = append(bodies, body)
		}
	}
	batchHeader := func() http.Header {
		h := ceil.signed("/$batch")
		h["Content-Type"] = []string{contentType}
		return h
	}
	perEntity := func(b *testing.B, cpu cpuMeter) {
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
		cpu.report(b, n)
	}
	warmUp(b, warmTime,
		func() error { _, err := tbl.BulkWrite(ctx, items, nil); return err },
		func() error { return ceil.sendBatches(ctx, bodies, batchHeader(), conc) })
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				if _, err := tbl.BulkWrite(ctx, items, nil); err != nil {
					b.Fatal(err)
				}
			}
			perEntity(b, cpu)
		}),
		benchutil.S("raw", func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				chunks := rawChunks(b)
				work := make(chan []aztables.TransactionAction)
				var wg sync.WaitGroup
				var failed atomic.Value
				for range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for chunk := range work {
							if _, err := raw.SubmitTransaction(ctx, chunk, nil); err != nil {
								failed.Store(err)
							}
						}
					}()
				}
				for _, c := range chunks {
					work <- c
				}
				close(work)
				wg.Wait()
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
			}
			perEntity(b, cpu)
		}),
		benchutil.S("raw-sequential", func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				for _, chunk := range rawChunks(b) {
					if _, err := raw.SubmitTransaction(ctx, chunk, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			perEntity(b, cpu)
		}),
		benchutil.S("raw-single", func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				for i := 0; i < n; i++ {
					body, err := json.Marshal(rawRow("p"+strconv.Itoa(i%parts), i))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := raw.UpsertEntity(ctx, body, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			perEntity(b, cpu)
		}),
		benchutil.S("ceiling", func(b *testing.B) {
			h := batchHeader()
			cpu := startCPU()
			for b.Loop() {
				if err := ceil.sendBatches(ctx, bodies, h, conc); err != nil {
					b.Fatal(err)
				}
			}
			perEntity(b, cpu)
		}))
}

// BenchmarkScan10k reads one partition of 10,000 entities per op.
func BenchmarkScan10k(b *testing.B) { benchScan(b, 10_000) }

// BenchmarkScan100k reads one partition of 100,000 entities per op. Its
// heap-growth-MB (the heap in use over the scan's second half less that
// over its first) and its peak-heap-MB against Scan10k's show whether
// memory stays flat as the scan grows.
func BenchmarkScan100k(b *testing.B) { benchScan(b, 100_000) }

// heapSampler tracks the heap in use (live objects and garbage not yet
// swept) while a scan runs: its peak, and how much the peak of a scan's
// second half exceeds that of its first half. A scan whose memory stays
// flat shows a growth near zero whatever its length; one that held on to
// its rows would grow by about half their size.
type heapSampler struct {
	s           []metrics.Sample
	peak        uint64
	early, late uint64 // peaks over the first and the second half of a scan
	growth      int64  // the largest late-early over the scans, at least 0
}

func newHeapSampler() *heapSampler {
	runtime.GC()
	return &heapSampler{s: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
}

// sample records the heap in use after row i of a scan of n rows.
func (h *heapSampler) sample(i, n int) {
	metrics.Read(h.s)
	v := h.s[0].Value.Uint64()
	h.peak = max(h.peak, v)
	if i <= n/2 {
		h.early = max(h.early, v)
	} else {
		h.late = max(h.late, v)
	}
}

// endScan closes one scan's halves.
func (h *heapSampler) endScan() {
	if h.early > 0 && h.late > 0 {
		h.growth = max(h.growth, int64(h.late)-int64(h.early))
	}
	h.early, h.late = 0, 0
}

func (h *heapSampler) report(b *testing.B) {
	b.ReportMetric(float64(h.peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(h.growth)/(1<<20), "heap-growth-MB")
}

// scanFixtures holds one filled table per scan size for the whole
// benchmark binary: -count repeats must not write 100,000 entities again.
var (
	scanMu       sync.Mutex
	scanFixtures = map[int]*patterns.Table[benchEmployee]{}
)

func scanFixture(b *testing.B, n int) (*patterns.Table[benchEmployee], *aztables.Client) {
	scanMu.Lock()
	defer scanMu.Unlock()
	if tbl, ok := scanFixtures[n]; ok {
		return tbl, tbl.Client()
	}
	ctx := context.Background()
	tbl, err := patterns.NewTable[benchEmployee](testenv.Account(b), "benchscan"+strconv.Itoa(n), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	items := func(yield func(benchEmployee) bool) {
		for i := 0; i < n; i++ {
			if !yield(benchRow("scan", i)) {
				return
			}
		}
	}
	if _, err := tbl.BulkWriteSeq(ctx, items, nil); err != nil {
		b.Fatal(err)
	}
	scanFixtures[n] = tbl
	return tbl, tbl.Client()
}

// benchScan reads one partition of n entities per op: tablekit's Query
// with every property (SelectAll) and with its default projection ($select
// of T's fields), the SDK's pager with encoding/json, and the ceiling.
func benchScan(b *testing.B, n int) {
	ctx := context.Background()
	tbl, raw := scanFixture(b, n)
	ceil := newCeiling(b)
	const filter = "PartitionKey eq 'scan'"
	// The emulator is warmed up with scans of the first 10,000 entities:
	// the side measured first must not pay for a cold query path.
	warmUp(b, warmTime, func() error {
		for _, err := range tbl.Query(ctx, keys.PK().Eq("scan"), &patterns.QueryOptions{SelectAll: true, Limit: 10_000}) {
			if err != nil {
				return err
			}
		}
		return nil
	})
	// scanSide measures one way of scanning: scan calls row for each
	// entity it decoded, and returns the first error.
	scanSide := func(heapToo bool, scan func(row func()) error) func(b *testing.B) {
		return func(b *testing.B) {
			heap := newHeapSampler()
			cpu := startCPU()
			for b.Loop() {
				count := 0
				err := scan(func() {
					count++
					if count%1000 == 0 {
						heap.sample(count, n)
					}
				})
				heap.endScan()
				if err != nil {
					b.Fatal(err)
				}
				if count != n {
					b.Fatalf("scanned %d", count)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
			cpu.report(b, n)
			if heapToo {
				heap.report(b)
			}
		}
	}
	query := func(opts *patterns.QueryOptions) func(b *testing.B) {
		return scanSide(true, func(row func()) error {
			for _, err := range tbl.Query(ctx, keys.PK().Eq("scan"), opts) {
				if err != nil {
					return err
				}
				row()
			}
			return nil
		})
	}
	benchutil.RunSides(b,
		benchutil.S("tablekit", query(&patterns.QueryOptions{SelectAll: true})),
		benchutil.S("tablekit-select", query(nil)),
		benchutil.S("raw", scanSide(true, func(row func()) error {
			pager := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr(filter)})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					return err
				}
				for _, body := range page.Entities {
					var e rawEmployee
					if err := json.Unmarshal(body, &e); err != nil {
						return err
					}
					row()
				}
			}
			return nil
		})),
		benchutil.S("ceiling", scanSide(false, func(row func()) error {
			count, err := ceil.scan(ctx, tbl.Name(), filter, ceil.signed("/"+tbl.Name()+"()"))
			for range count {
				row()
			}
			return err
		})))
}
