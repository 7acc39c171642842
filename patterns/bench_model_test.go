package patterns_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// benchOrder is the order store's entity, without its blob field.
type benchOrder struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Number       string
	Status       string
	Placed       time.Time
	Total        float64
}

// BenchmarkModelUpdate: an update of an indexed value of an entity with
// three views (an index in its partition, a tail, an index in another
// table kept by the worker), through a Model, beside what a developer
// writes over aztables and azqueue for the same result: read the entity,
// enqueue the intent, then one transaction that replaces the entity and
// rewrites its two rows in the partition. Both sides make 3 requests.
func BenchmarkModelUpdate(b *testing.B) {
	ctx := context.Background()
	acct, c := testenv.CountingAccount(b)
	q, err := consistency.NewQueue(acct, testenv.QueueName(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	views := patterns.Views[benchOrder]{
		Indexes: []patterns.Index[benchOrder]{{Name: "number", Unique: true, Key: func(o *benchOrder) string { return o.Number }, Props: []string{"Number", "Status"}}},
		EventualIndexes: []patterns.Index[benchOrder]{{Name: "status", Key: func(o *benchOrder) string { return o.Status },
			Partition: func(o *benchOrder) string { return o.Status }, Table: testenv.TableName(b), Props: []string{"Number", "Status"}}},
		Tails: []patterns.Tail[benchOrder]{{Name: "recent", Time: func(o *benchOrder) time.Time { return o.Placed }, Props: []string{"Number", "Total"}}},
	}
	m, err := patterns.NewModel(acct, testenv.TableName(b), views, &patterns.ModelOptions{Queue: q})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	placed := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"o1", "o2"} {
		o := benchOrder{PartitionKey: "c1", RowKey: id, Number: "N" + id, Status: "open", Placed: placed, Total: 10}
		if err := m.Insert(ctx, &o, nil); err != nil {
			b.Fatal(err)
		}
	}
	raw := m.Table().Client()
	rawQueue := acct.Queues().NewQueueClient(q.Name())
	statuses := []string{"open", "paid"}
	nm, nr := 0, 0
	model := func() error {
		nm++
		_, err := m.Update(ctx, "c1", "o1", func(o *benchOrder) error { o.Status = statuses[nm%2]; return nil }, nil)
		return err
	}
	byHand := func() error {
		nr++
		got, err := raw.GetEntity(ctx, "c1", "o2", nil)
		if err != nil {
			return err
		}
		var o map[string]any
		if err := json.Unmarshal(got.Value, &o); err != nil {
			return err
		}
		o["Status"] = statuses[nr%2]
		delete(o, "odata.metadata")
		delete(o, "odata.etag")
		delete(o, "Timestamp")
		body, _ := json.Marshal(o)
		numberRow, _ := json.Marshal(map[string]any{"PartitionKey": "c1", "RowKey": "number_No2", "Number": "No2", "Status": o["Status"]})
		tailRow, _ := json.Marshal(map[string]any{"PartitionKey": "c1", "RowKey": "recent_" + keys.Join(keys.InvertedTicks(placed), "o2"), "Number": "No2", "Total": o["Total"]})
		intent, _ := json.Marshal(map[string]any{"sync": map[string]string{"table": m.Table().Name(), "pk": "c1", "rk": "o2"}})
		if _, err := rawQueue.EnqueueMessage(ctx, string(intent), &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(1))}); err != nil {
			return err
		}
		etag := azcore.ETag(got.ETag)
		_, err = raw.SubmitTransaction(ctx, []aztables.TransactionAction{
			{ActionType: aztables.TransactionTypeUpdateReplace, Entity: body, IfMatch: &etag},
			{ActionType: aztables.TransactionTypeInsertReplace, Entity: numberRow},
			{ActionType: aztables.TransactionTypeInsertReplace, Entity: tailRow},
		}, nil)
		return err
	}
	warmUp(b, warmTime, model, byHand)
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				if err := model(); err != nil {
					b.Fatal(err)
				}
			}
			reportRequests(b, c)
		}),
		benchutil.S("raw", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				if err := byHand(); err != nil {
					b.Fatal(err)
				}
			}
			reportRequests(b, c)
		}),
	)
}
