package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// BenchmarkTransactions measures transactions per second through Azurite
// with 1, 4 and 16 transactions in flight: as many producers as the
// worker's concurrency each enqueue a one-entity upsert transaction and
// wait until the worker has applied it before enqueueing the next. A
// marker step at the end of each transaction records the enqueue-to-applied
// latency (p50, p99), so the figures describe a worker keeping up, not a
// backlog.
func BenchmarkTransactions(b *testing.B) {
	for range benchutil.Rounds(b) {
		for _, conc := range []int{1, 4, 16} {
			b.Run("concurrency="+strconv.Itoa(conc), func(b *testing.B) {
				runTransactions(b, conc, workerConsumer)
			})
		}
	}
}

// BenchmarkWorkerVsLoop compares the worker with the loop a user would
// write, draining the same backlog at the same concurrency: b.N one-step
// upsert transactions enqueued through Queue before the timer starts, then
// applied 16 at a time. The worker is configured as the stock
// tablekit-worker runs it (Concurrency 16, the default BatchSize and
// visibility timeout, JSON logs at info level, here written to
// io.Discard). The hand-written loop receives up to 32 messages at a
// time, keeps them queued for 16 appliers, each decoding the envelope,
// upserting the entity with aztables and deleting the message. Both sides
// report tx/s and the client CPU per transaction (cpu-µs/tx): with the
// backlog enqueued beforehand, that CPU is the consumer's alone. Compare
// the medians of the rounds' ratios (TABLEKIT_BENCH=rounds=N alternates
// the sides).
func BenchmarkWorkerVsLoop(b *testing.B) {
	const conc = 16
	benchutil.RunSides(b,
		benchutil.Side{Name: "tablekit", Fn: func(b *testing.B) { drainBacklog(b, conc, backlogWorker) }},
		benchutil.Side{Name: "raw", Fn: func(b *testing.B) { drainBacklog(b, conc, backlogLoop) }})
}

// consumer starts what applies the queue's transactions, calling mark
// for each marker step; stop ends it, processed counts the messages done.
type consumer func(b *testing.B, acct *tablekit.Account, q *Queue, conc int, mark func(txID string, args json.RawMessage) error) (stop func(), processed func() int64)

func workerConsumer(b *testing.B, acct *tablekit.Account, q *Queue, conc int, mark func(string, json.RawMessage) error) (func(), func() int64) {
	w := newWorker(b, acct, q, WorkerOptions{Concurrency: conc, VisibilityTimeout: 30 * time.Second, PollInterval: 20 * time.Millisecond})
	w.Handle("mark", func(ctx context.Context, c *Call) error { return mark(c.TxID, c.Args) })
	return startWorker(b, w), w.Metrics().Processed
}

// drainConsumer starts what drains a backlog of upsert transactions;
// stop ends it, processed counts the messages deleted.
type drainConsumer func(b *testing.B, acct *tablekit.Account, q *Queue, conc int) (stop func(), processed func() int64)

// backlogWorker is the worker as tablekit-worker runs it by default.
func backlogWorker(b *testing.B, acct *tablekit.Account, q *Queue, conc int) (func(), func() int64) {
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w := newWorker(b, acct, q, WorkerOptions{Concurrency: conc, VisibilityTimeout: 30 * time.Second, PollInterval: 20 * time.Millisecond, Backoff: &DefaultBackoff, Logger: log})
	return startWorker(b, w), w.Metrics().Processed
}

// backlogLoop is the hand-written loop: one receiver keeping up to 32
// received messages queued for conc appliers.
func backlogLoop(b *testing.B, acct *tablekit.Account, q *Queue, conc int) (func(), func() int64) {
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int64
	var clients sync.Map // table name -> *aztables.Client
	client := func(table string) (*aztables.Client, error) {
		if c, ok := clients.Load(table); ok {
			return c.(*aztables.Client), nil
		}
		c, err := acct.Table(table)
		if err != nil {
			return nil, err
		}
		clients.Store(table, c)
		return c, nil
	}
	apply := func(m *azqueue.DequeuedMessage) error {
		var env struct {
			ID    string `json:"id"`
			Steps []struct {
				Kind string          `json:"kind"`
				Args json.RawMessage `json:"args"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(*m.MessageText), &env); err != nil {
			return err
		}
		for _, s := range env.Steps {
			if s.Kind != KindUpsertEntity {
				return errors.New("unknown step " + s.Kind)
			}
			var a struct {
				Table  string          `json:"table"`
				Entity json.RawMessage `json:"entity"`
			}
			if err := json.Unmarshal(s.Args, &a); err != nil {
				return err
			}
			c, err := client(a.Table)
			if err != nil {
				return err
			}
			if _, err := c.UpsertEntity(ctx, a.Entity, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
				return err
			}
		}
		_, err := q.qc.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
		return err
	}
	jobs := make(chan *azqueue.DequeuedMessage, 32)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				if err := apply(m); err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					continue
				}
				done.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for ctx.Err() == nil {
			resp, err := q.qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(30))})
			if err != nil {
				if ctx.Err() == nil {
					b.Error(err)
				}
				return
			}
			if len(resp.Messages) == 0 {
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			for _, m := range resp.Messages {
				jobs <- m
			}
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	b.Cleanup(stop)
	return stop, done.Load
}

// warmTransactions are drained before the timer starts: the first
// requests of a process open its connections and, on a service just
// started, meet it cold, a cost that fell on whichever side ran first.
const warmTransactions = 256

// drainBacklog enqueues b.N one-step upsert transactions (16 partitions)
// after warmTransactions more, lets consume drain the first
// warmTransactions, then times it draining the b.N others and reports
// tx/s and the client CPU per transaction, which is the consumer's alone:
// nothing else runs in the process meanwhile.
func drainBacklog(b *testing.B, conc int, consume drainConsumer) {
	acct := testenv.Account(b)
	ctx := context.Background()
	q := newQueue(b, acct)
	table := createTable(b, acct)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				e, _ := json.Marshal(map[string]any{"PartitionKey": "p" + strconv.Itoa(i%16), "RowKey": strconv.Itoa(i), "V": i})
				if err := q.Enqueue(ctx, NewTransaction(UpsertEntity(table, e, tablekit.UpsertReplace)), nil); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	total := int64(warmTransactions + b.N)
	for i := range total {
		next <- int(i)
	}
	close(next)
	wg.Wait()
	runtime.GC()
	stop, processed := consume(b, acct, q, conc)
	deadline := time.Now().Add(5 * time.Minute)
	for processed() < warmTransactions && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	b.ResetTimer()
	cpu := benchutil.ProcessCPU()
	start := time.Now()
	from := processed()
	for processed() < total && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := processed() - from
	b.ReportMetric(float64((benchutil.ProcessCPU()-cpu).Nanoseconds())/1e3/float64(n), "cpu-µs/tx")
	stop()
	if processed() < total {
		b.Fatalf("processed %d of %d", processed(), total)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "tx/s")
}

// runTransactions drives b.N transactions through consume, conc in
// flight, and reports tx/s, the enqueue-to-applied latency and the
// client CPU per transaction (producers included, on both sides).
func runTransactions(b *testing.B, conc int, consume consumer) {
	acct := testenv.Account(b)
	ctx := context.Background()
	q := newQueue(b, acct)
	table := createTable(b, acct)
	var mu sync.Mutex
	var lat []time.Duration
	waiting := map[string]chan struct{}{}
	mark := func(txID string, args json.RawMessage) error {
		var a struct{ T int64 }
		if err := json.Unmarshal(args, &a); err != nil {
			return err
		}
		d := time.Since(time.Unix(0, a.T))
		mu.Lock()
		lat = append(lat, d)
		ch := waiting[txID]
		delete(waiting, txID)
		mu.Unlock()
		if ch != nil {
			close(ch)
		}
		return nil
	}
	stop, processed := consume(b, acct, q, conc, mark)
	b.ResetTimer()
	cpu := benchutil.StartCPU()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				e, _ := json.Marshal(map[string]any{"PartitionKey": "p" + strconv.Itoa(i%16), "RowKey": strconv.Itoa(i), "V": i})
				tx := NewTransaction(UpsertEntity(table, e, tablekit.UpsertReplace), NewStep("mark", map[string]int64{"T": time.Now().UnixNano()}))
				done := make(chan struct{})
				mu.Lock()
				waiting[tx.ID] = done
				mu.Unlock()
				if err := q.Enqueue(ctx, tx, nil); err != nil {
					b.Error(err)
					continue
				}
				<-done
			}
		}()
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	deadline := time.Now().Add(5 * time.Minute)
	for processed() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.Report(b, 1, "tx")
	stop()
	if processed() < int64(b.N) {
		b.Fatalf("processed %d of %d", processed(), b.N)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tx/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

// BenchmarkRawQueueRoundTrip is a reference for one message's cost: one
// message enqueued, received and deleted with the azqueue client alone,
// no worker, no table write, one at a time.
func BenchmarkRawQueueRoundTrip(b *testing.B) {
	acct := testenv.Account(b)
	ctx := context.Background()
	q := newQueue(b, acct)
	body := `{"v":1,"id":"x","steps":[{"kind":"upsert-entity","args":{}}]}`
	b.ResetTimer()
	for range b.N {
		if _, err := q.qc.EnqueueMessage(ctx, body, nil); err != nil {
			b.Fatal(err)
		}
		resp, err := q.qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(1))})
		if err != nil || len(resp.Messages) != 1 {
			b.Fatalf("dequeue: %v", err)
		}
		m := resp.Messages[0]
		if _, err := q.qc.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}
