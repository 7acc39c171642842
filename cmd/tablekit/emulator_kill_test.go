package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// startEmulatorProcess runs `tablekit emulator --location dir` and
// returns the process and its connection string once it listens.
func startEmulatorProcess(t *testing.T, dir string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	args := append([]string{"--location", dir, "--table-port", "0", "--queue-port", "0", "--blob-port", "0"}, extra...)
	cmd, s := startEmulatorArgs(t, nil, args...)
	return cmd, s.ConnectionString
}

// startEmulatorArgs runs `tablekit emulator --json args...` with env
// added to the test's environment, and returns the process (killed at
// the test's end) and the line it printed once it listens.
func startEmulatorArgs(t *testing.T, env []string, args ...string) (*exec.Cmd, emulatorSummary) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"emulator", "--json"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &headWriter{max: 4 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait() // it ended: its stderr is all written
		t.Fatalf("tablekit emulator %s: no start line: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.b.Bytes())
	}
	var s emulatorSummary
	if err := json.Unmarshal([]byte(line), &s); err != nil || !s.OK {
		t.Fatalf("tablekit emulator %s: start line %q: %v", strings.Join(args, " "), line, err)
	}
	return cmd, s
}

// headWriter keeps the first max bytes written to it: a process's
// stderr, without holding a long request log.
type headWriter struct {
	b   bytes.Buffer
	max int
}

func (h *headWriter) Write(p []byte) (int, error) {
	if room := h.max - h.b.Len(); room > 0 {
		h.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Three SIGKILLs during a load lose nothing that was answered and leave
// no transaction half applied: `tablekit emulator --location` runs under
// 8 writers of 100-entity transactions, 4 of queue messages, 3 of block
// blobs (every other one past 64 KiB, so in a file of its own) and one of
// an append blob, and is killed with SIGKILL three times, each time once
// enough was answered; each start resumes on the same location. After the
// third, every acknowledged transaction is there whole and every other
// one whole or absent, every acknowledged message and blob is there with
// its content, and the append blob holds every acknowledged block in
// order. --reset then empties the location.
func TestEmulatorLocationSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const writers, size, rounds = 8, 100, 3
	type txn struct {
		pk string
		n  int64
	}
	var (
		mu        sync.Mutex
		acked     = map[txn]bool{}    // transactions answered 202 without error
		msgAcked  = map[string]bool{} // message texts answered 201
		blobAcked = map[string][]byte{}
		appended  []byte // the append blob's blocks answered, in order
	)
	var connStr string
	for round := range rounds {
		var cmd *exec.Cmd
		cmd, connStr = startEmulatorProcess(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		svc, err := aztables.NewServiceClientFromConnectionString(connStr, nil)
		if err != nil {
			t.Fatal(err)
		}
		qsvc, err := azqueue.NewServiceClientFromConnectionString(connStr, nil)
		if err != nil {
			t.Fatal(err)
		}
		bsvc, err := azblob.NewClientFromConnectionString(connStr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if _, err := svc.CreateTable(ctx, "kill", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := qsvc.CreateQueue(ctx, "kill", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := bsvc.CreateContainer(ctx, "kill", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := bsvc.ServiceClient().NewContainerClient("kill").NewAppendBlobClient("log").Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		c := svc.NewClient("kill")
		var sent atomic.Int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pk := fmt.Sprintf("r%dw%d", round, w)
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
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := qsvc.NewQueueClient("kill")
				for n := 0; ctx.Err() == nil; n++ {
					text := fmt.Sprintf("r%dq%d-%d", round, w, n)
					if _, err := q.EnqueueMessage(ctx, text, nil); err != nil {
						return // killed
					}
					mu.Lock()
					msgAcked[text] = true
					mu.Unlock()
				}
			}()
		}
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ctx.Err() == nil; n++ {
					name := fmt.Sprintf("r%db%d-%d", round, w, n)
					content := bytes.Repeat([]byte(name+" "), 1+n%2*10000) // a few bytes, or past 64 KiB (a name of 7 bytes or more)
					if _, err := bsvc.UploadBuffer(ctx, "kill", name, content, nil); err != nil {
						return // killed
					}
					mu.Lock()
					blobAcked[name] = content
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ab := bsvc.ServiceClient().NewContainerClient("kill").NewAppendBlobClient("log")
			for n := 0; ctx.Err() == nil; n++ {
				block := fmt.Appendf(nil, "round %d block %d\n", round, n)
				mu.Lock()
				at := int64(len(appended))
				mu.Unlock()
				// The position condition makes a lost answer's retry
				// fail instead of appending twice.
				_, err := ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(block)), &appendblob.AppendBlockOptions{
					AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: &at}})
				if err != nil {
					return // killed
				}
				mu.Lock()
				appended = append(appended, block...)
				mu.Unlock()
			}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for sent.Load() < 16 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()
		cancel()
		wg.Wait()
		if sent.Load() < 16 {
			t.Fatalf("round %d: only %d transactions were answered before the kill", round, sent.Load())
		}
	}

	second, connStr := startEmulatorProcess(t, dir)
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, nil)
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
	t.Logf("%d transactions answered before the %d SIGKILLs; %d entity groups after them", len(acked), rounds, len(found))

	qsvc, err := azqueue.NewServiceClientFromConnectionString(connStr, nil)
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
	for text := range msgAcked {
		if !stored[text] {
			t.Errorf("message %s was answered 201 and is lost", text)
		}
	}
	if len(msgAcked) == 0 {
		t.Error("no message was answered before the kills")
	}
	t.Logf("%d messages answered before the SIGKILLs; %d stored after them", len(msgAcked), len(stored))

	bsvc, err := azblob.NewClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) ([]byte, error) {
		d, err := bsvc.DownloadStream(context.Background(), "kill", name, nil)
		if err != nil {
			return nil, err
		}
		defer d.Body.Close()
		return io.ReadAll(d.Body)
	}
	for name, want := range blobAcked {
		if got, err := read(name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("blob %s was answered 201 and is lost or changed (%d bytes, %v; want %d)", name, len(got), err, len(want))
		}
	}
	log, err := read("log")
	if err != nil || !bytes.HasPrefix(log, appended) {
		t.Errorf("the append blob holds %d bytes (%v), not every answered block in order (%d bytes)", len(log), err, len(appended))
	}
	if len(blobAcked) == 0 || len(appended) == 0 {
		t.Errorf("%d blobs and %d appended bytes answered before the kills; want some of each", len(blobAcked), len(appended))
	}
	t.Logf("%d blobs and %d appended bytes answered before the SIGKILLs", len(blobAcked), len(appended))

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
