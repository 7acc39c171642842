package consistency

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/internal/testenv"
)

// BenchmarkTransactions measures transactions per second through Azurite
// with 1, 4 and 16 transactions in flight: as many producers as the
// worker's concurrency each enqueue a one-entity upsert transaction and
// wait until the worker has applied it before enqueueing the next. A
// marker step at the end of each transaction records the enqueue-to-applied
// latency (p50, p99), so the figures describe a worker keeping up, not a
// backlog.
func BenchmarkTransactions(b *testing.B) {
	for _, conc := range []int{1, 4, 16} {
		b.Run("concurrency="+strconv.Itoa(conc), func(b *testing.B) {
			acct := testenv.Account(b)
			ctx := context.Background()
			q := newQueue(b, acct)
			table := createTable(b, acct)
			var mu sync.Mutex
			var lat []time.Duration
			waiting := map[string]chan struct{}{}
			w := newWorker(b, acct, q, WorkerOptions{Concurrency: conc, VisibilityTimeout: 30 * time.Second, PollInterval: 20 * time.Millisecond})
			w.Handle("mark", func(ctx context.Context, c *Call) error {
				var a struct{ T int64 }
				if err := c.Decode(&a); err != nil {
					return err
				}
				d := time.Since(time.Unix(0, a.T))
				mu.Lock()
				lat = append(lat, d)
				ch := waiting[c.TxID]
				delete(waiting, c.TxID)
				mu.Unlock()
				if ch != nil {
					close(ch)
				}
				return nil
			})
			stop := startWorker(b, w)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			next := make(chan int)
			for range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						e, _ := json.Marshal(map[string]any{"PartitionKey": "p" + strconv.Itoa(i%16), "RowKey": strconv.Itoa(i), "V": i})
						tx := NewTransaction(UpsertEntity(table, e, ""), NewStep("mark", map[string]int64{"T": time.Now().UnixNano()}))
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
			for w.Metrics().Processed() < int64(b.N) && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			stop()
			if w.Metrics().Processed() < int64(b.N) {
				b.Fatalf("processed %d of %d", w.Metrics().Processed(), b.N)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tx/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkRawQueueRoundTrip is the reference: one message enqueued,
// received and deleted with the azqueue client alone, no worker.
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
