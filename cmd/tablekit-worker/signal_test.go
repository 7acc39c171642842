package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/tools/testenv"
)

// stopped waits for the process to exit after a signal and returns its log;
// the exit must be 0, after a drain ("worker stopped" logged).
func (p *proc) stopped(t *testing.T, within time.Duration) string {
	t.Helper()
	exited := make(chan error, 1)
	go func() { <-p.done; exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v, want 0; log:\n%s", err, p.log())
		}
	case <-time.After(within):
		t.Fatalf("still running %v after the signal; log:\n%s", within, p.log())
	}
	log := p.log()
	if !strings.Contains(log, `"msg":"worker stopped"`) {
		t.Fatalf("no drain before the exit; log:\n%s", log)
	}
	return log
}

func newQueue(t *testing.T) *consistency.Queue {
	t.Helper()
	q, err := consistency.NewQueue(testenv.Account(t), queueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestSignalAtAnyMoment: SIGTERM drains and exits 0 whenever it comes: at
// the start, before the queues are created and "worker started" is logged;
// while idle; and in the middle of a transaction, which then finishes
// (nothing is left in the queue, every entity moved).
func TestSignalAtAnyMoment(t *testing.T) {
	t.Run("at start", func(t *testing.T) {
		qname := queueName(t)
		p := start(t, "run", "--queue", qname, "--metrics-addr", "")
		p.waitLine(t, 30*time.Second, "the first log line", func(l map[string]any) bool { return l["msg"] == "worker starting" })
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.stopped(t, 30*time.Second)
	})

	t.Run("while idle", func(t *testing.T) {
		q := newQueue(t)
		p := start(t, "run", "--queue", q.Name(), "--metrics-addr", "", "--poll", "100ms")
		p.waitLine(t, 30*time.Second, "the worker to start", func(l map[string]any) bool { return l["msg"] == "worker started" })
		time.Sleep(300 * time.Millisecond) // a few empty receives
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.stopped(t, 10*time.Second)
	})

	t.Run("mid-transaction", func(t *testing.T) {
		acct := testenv.Account(t)
		ctx := context.Background()
		current, archive := createTable(t, acct), createTable(t, acct)
		q := newQueue(t)
		const n = 30
		tx := consistency.NewTransaction()
		for i := range n {
			rk := "emp" + strconv.Itoa(1000+i)
			b, _ := json.Marshal(map[string]any{"PartitionKey": "Sales", "RowKey": rk, "Name": "E" + strconv.Itoa(i)})
			if _, err := acct.Tables().NewClient(current).AddEntity(ctx, b, nil); err != nil {
				t.Fatal(err)
			}
			tx.Add(consistency.MoveEntity(consistency.EntityRef{Table: current, PartitionKey: "Sales", RowKey: rk}, consistency.EntityRef{Table: archive}))
		}
		if err := q.Enqueue(ctx, tx, nil); err != nil {
			t.Fatal(err)
		}
		p := start(t, "run", "--queue", q.Name(), "--metrics-addr", "", "--log-level", "debug", "--drain", "60s")
		p.waitLine(t, 30*time.Second, "step 2 applied", func(l map[string]any) bool {
			return l["msg"] == "step applied" && l["step"] == 2.0
		})
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		log := p.stopped(t, 60*time.Second)
		if !strings.Contains(log, `"msg":"transaction applied"`) {
			t.Fatalf("the transaction did not finish during the drain; log:\n%s", log)
		}
		if c, a := count(t, acct, current), count(t, acct, archive); c != 0 || a != n {
			t.Fatalf("after the drain: %d in Current, %d in Archive; want 0 and %d", c, a, n)
		}
		if d, err := q.Depth(ctx, nil); err != nil || d.Messages != 0 || d.Poison != 0 {
			t.Fatalf("queue after the drain: %+v %v", d, err)
		}
	})
}

// TestUntilEmptyCLI: "run --until-empty" applies what is queued, including
// a message enqueued with a delay, and exits 0 by itself, not before the
// delayed message is applied; on an empty queue it exits at once. Its
// /livez and /readyz answer while it runs. The delay passes on the test's
// clock (real time on Azurite or an account).
func TestUntilEmptyCLI(t *testing.T) {
	cs, clock := testenv.ClockConnectionString(t)
	acct := testenv.AccountOn(t, cs, nil)
	env := append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+cs)
	ctx := context.Background()
	table := createTable(t, acct)
	q, err := consistency.NewQueue(acct, queueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		b, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": strconv.Itoa(i)})
		var o *consistency.EnqueueOptions
		if i == 0 {
			o = &consistency.EnqueueOptions{Delay: 2 * time.Second}
		}
		if err := q.Enqueue(ctx, consistency.NewTransaction(consistency.UpsertEntity(table, b, tablekit.UpsertReplace)), o); err != nil {
			t.Fatal(err)
		}
	}
	p := startEnv(t, env, "run", "--queue", q.Name(), "--until-empty", "--poll", "100ms", "--metrics-addr", "127.0.0.1:0")
	addr := p.waitLine(t, 30*time.Second, "the metrics address", func(l map[string]any) bool { return l["msg"] == "metrics listening" })["addr"].(string)
	if code := status(t, "http://"+addr+"/livez"); code != http.StatusOK {
		t.Errorf("/livez: %d", code)
	}
	p.waitLine(t, 30*time.Second, "the worker to start", func(l map[string]any) bool { return l["msg"] == "worker started" })
	testenv.WaitFor(t, 10*time.Second, "/readyz 200", func() bool { return status(t, "http://"+addr+"/readyz") == http.StatusOK })
	// The four visible ones applied, the delayed one not visible yet: the
	// worker polls on.
	testenv.WaitFor(t, 10*time.Second, "the visible transactions", func() bool { return count(t, acct, table) == 4 })
	select {
	case <-p.done:
		t.Fatalf("the worker exited with the delayed message not applied; log:\n%s", p.log())
	case <-time.After(300 * time.Millisecond): // three polls
	}
	clock.Pass(2 * time.Second)
	log := p.stopped(t, 60*time.Second)
	if !strings.Contains(log, `"msg":"queues empty; stopping"`) {
		t.Fatalf("no empty-queue stop; log:\n%s", log)
	}
	if c := count(t, acct, table); c != 5 {
		t.Fatalf("%d of 5 entities written", c)
	}

	cmd := exec.Command(binary(t), "run", "--queue", q.Name(), "--until-empty", "--metrics-addr", "")
	cmd.Env = env
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("--until-empty on an empty queue: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("--until-empty on an empty queue did not exit")
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0 // the server stops with the process
	}
	resp.Body.Close()
	return resp.StatusCode
}
