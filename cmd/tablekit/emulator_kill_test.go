package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// startEmulatorProcess runs `tablekit emulator --location dir` and
// returns the process and its connection string once it listens.
func startEmulatorProcess(t *testing.T, dir string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	args := append([]string{"emulator", "--location", dir, "--table-port", "0", "--queue-port", "0", "--blob-port", "0", "--json"}, extra...)
	cmd := exec.Command(binary(t), args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("tablekit emulator --location: no start line: %v", err)
	}
	var s emulatorSummary
	if err := json.Unmarshal([]byte(line), &s); err != nil || !s.OK {
		t.Fatalf("tablekit emulator --location: start line %q: %v", line, err)
	}
	return cmd, s.ConnectionString
}

// A SIGKILL during concurrent transactions loses none that was answered
// and leaves none half applied: `tablekit emulator --location`, killed
// under 8 writers of 100-entity transactions, starts again on the same
// location with every acknowledged transaction whole and every other one
// whole or absent. --reset then empties the location.
func TestEmulatorLocationSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, connStr := startEmulatorProcess(t, dir)
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := svc.CreateTable(ctx, "kill", nil); err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("kill")

	const writers, size = 8, 100
	type txn struct {
		pk string
		n  int64
	}
	var (
		mu    sync.Mutex
		acked = map[txn]bool{} // answered 202 without error
		sent  atomic.Int64
		wg    sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pk := fmt.Sprintf("w%d", w)
			for n := int64(0); ctx.Err() == nil; n++ {
				actions := make([]aztables.TransactionAction, size)
				for i := range actions {
					// Every other transaction rewrites the last one's
					// entities: a torn one would leave them mixed.
					actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace,
						Entity: fmt.Appendf(nil, `{"PartitionKey":%q,"RowKey":"b%05d-%03d","Batch":%d}`, pk, n/2*2, i, n)}
				}
				if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
					return // killed
				}
				sent.Add(1)
				mu.Lock()
				acked[txn{pk, n}] = true
				mu.Unlock()
			}
		}()
	}
	// Four writers of queue messages beside them: every message answered
	// 201 must be there after the kill.
	qsvc, err := azqueue.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qsvc.CreateQueue(ctx, "kill", nil); err != nil {
		t.Fatal(err)
	}
	var msgAcked sync.Map // text -> true
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := qsvc.NewQueueClient("kill")
			for n := 0; ctx.Err() == nil; n++ {
				text := fmt.Sprintf("q%d-%d", w, n)
				if _, err := q.EnqueueMessage(ctx, text, nil); err != nil {
					return // killed
				}
				msgAcked.Store(text, true)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for sent.Load() < 40 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	cancel()
	wg.Wait()
	if len(acked) < 40 {
		t.Fatalf("only %d transactions were answered before the kill", len(acked))
	}

	second, connStr := startEmulatorProcess(t, dir)
	svc, err = aztables.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each pair of transactions' entities: RowKey prefix -> the Batch
	// numbers found.
	found := map[string]map[int64]int{}
	pager := svc.NewClient("kill").NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: to.Ptr("PartitionKey,RowKey,Batch")})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			var e struct {
				PartitionKey, RowKey string
				Batch                int64
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			k := e.PartitionKey + "/" + e.RowKey[:6]
			if found[k] == nil {
				found[k] = map[int64]int{}
			}
			found[k][e.Batch]++
		}
	}
	for k, batches := range found {
		if len(batches) != 1 {
			t.Errorf("%s: entities of transactions %v: one transaction half applied", k, batches)
		}
		for b, n := range batches {
			if n != size {
				t.Errorf("%s: %d entities of transaction %d, want %d", k, n, b, size)
			}
		}
	}
	for a := range acked {
		got := found[fmt.Sprintf("%s/b%05d", a.pk, a.n/2*2)]
		// The answered transaction, or the one after it (which
		// replaced its entities), is there.
		if got[a.n] != size && got[a.n+1] != size {
			t.Errorf("transaction %d of %s was answered and is lost (found %v)", a.n, a.pk, got)
		}
	}
	t.Logf("%d transactions answered before the SIGKILL; %d entity groups after it", len(acked), len(found))

	qsvc, err = azqueue.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	q := qsvc.NewQueueClient("kill")
	for {
		got, err := q.DequeueMessages(context.Background(), &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(3600))})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			stored[*m.MessageText] = true
		}
	}
	answered := 0
	msgAcked.Range(func(k, _ any) bool {
		answered++
		if !stored[k.(string)] {
			t.Errorf("message %s was answered 201 and is lost", k)
		}
		return true
	})
	if answered == 0 {
		t.Error("no message was answered before the kill")
	}
	t.Logf("%d messages answered before the SIGKILL; %d stored after it", answered, len(stored))

	// --reset empties the location: no table is left.
	second.Process.Kill()
	second.Wait()
	_, connStr = startEmulatorProcess(t, dir, "--reset")
	svc, err = aztables.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := svc.NewListTablesPager(nil).NextPage(context.Background())
	if err != nil || len(page.Tables) != 0 {
		t.Fatalf("after --reset: %d tables (%v), want none", len(page.Tables), err)
	}
}
