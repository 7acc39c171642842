package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
)

// syncBuffer is a bytes.Buffer safe for the command's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// "tablekit emulator" prints a connection string that works, serves until
// its context ends (SIGTERM), and then exits 0 with its ports closed.
func TestEmulatorCommandServesUntilStopped(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"emulator", "--table-port", "0", "--queue-port", "0", "--blob-port", "0"}, strings.NewReader(""), &stdout, &stderr)
	}()
	var cs string
	for deadline := time.Now().Add(10 * time.Second); cs == ""; {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			cs = line
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection string within 10 s; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	acct, err := tablekit.Connect(cs, nil)
	if err != nil {
		t.Fatalf("connection string %q: %v", cs, err)
	}
	type Row struct {
		PartitionKey, RowKey string
		N                    int
	}
	tbl, err := patterns.NewTable[Row](acct, "emulatorcmd", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(ctx, &Row{PartitionKey: "p", RowKey: "r", N: 7}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := tbl.Get(ctx, "p", "r", nil); err != nil || got.N != 7 {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the emulator did not stop within 10 s of its context ending")
	}
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := tbl.Get(short, "p", "r", nil); err == nil {
		t.Error("the emulator still answers after it stopped")
	}
	// Without --silent, a line per request on stderr, without the key.
	log := stderr.String()
	if !strings.Contains(log, " table 127.0.0.1 POST /"+emulator.DevAccountName+"/emulatorcmd 204 - ") {
		t.Errorf("stderr has no log line for the insert:\n%s", log)
	}
	if strings.Contains(log, emulator.DevAccountKey) || strings.Contains(log, "SharedKey") {
		t.Errorf("the request log shows a credential:\n%s", log)
	}
}

// emulator --silent logs no request on stderr; --debug FILE appends each
// request with its headers, credentials redacted, to FILE.
func TestEmulatorCommandSilentDebug(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	debugFile := filepath.Join(t.TempDir(), "debug.log")
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"emulator", "--table-port", "0", "--queue-port", "0", "--blob-port", "0", "--silent", "--debug", debugFile}, strings.NewReader(""), &stdout, &stderr)
	}()
	var cs string
	for deadline := time.Now().Add(10 * time.Second); cs == ""; {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			cs = line
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection string within 10 s; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	acct, err := tablekit.Connect(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acct.Tables().CreateTable(ctx, "silentdebug", nil); err != nil {
		t.Fatal(err)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "/Tables") {
		t.Errorf("--silent, yet stderr has a request:\n%s", stderr.String())
	}
	b, err := os.ReadFile(debugFile)
	if err != nil {
		t.Fatal(err)
	}
	debug := string(b)
	if !strings.Contains(debug, " table 127.0.0.1 POST /"+emulator.DevAccountName+"/Tables 201 - ") || !strings.Contains(debug, "REDACTED") {
		t.Errorf("--debug's file lacks the request or its redacted credential:\n%s", debug)
	}
	if strings.Contains(debug, emulator.DevAccountKey) {
		t.Error("--debug's file holds the account key")
	}
}

// emulator --json prints one object with a connection string that works
// (its key not redacted: the user asked for it); a port in use exits 1.
func TestEmulatorJSONAndAPortInUse(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"emulator", "--table-port", "0", "--queue-port", "0", "--blob-port", "0", "--json"}, strings.NewReader(""), &stdout, &stderr)
	}()
	var s emulatorSummary
	for deadline := time.Now().Add(10 * time.Second); ; {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("emulator --json printed %q: %v", line, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing on stdout within 10 s; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Command != "emulator" || !s.OK || !strings.HasPrefix(s.Table, "http://127.0.0.1:") || s.Queue == "" || s.Blob == "" || !strings.Contains(s.ConnectionString, "TableEndpoint="+s.Table) {
		t.Fatalf("emulator --json: %+v", s)
	}
	acct, err := tablekit.Connect(s.ConnectionString, nil)
	if err != nil {
		t.Fatalf("connection string %q: %v", s.ConnectionString, err)
	}
	tbl, err := patterns.NewTable[entity.Entity](acct, "emulatorjson", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatalf("the connection string of --json does not reach the emulator: %v", err)
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(s.Table, "http://"), ":")
	port, _, _ = strings.Cut(port, "/")
	var out, errOut bytes.Buffer
	if code := realMain(ctx, []string{"emulator", "--table-port", port, "--queue-port", "0", "--blob-port", "0"}, nil, &out, &errOut); code != 1 || out.Len() != 0 {
		t.Errorf("a second emulator on table port %s: exit %d, stdout %q, stderr %q; want exit 1", port, code, out.String(), errOut.String())
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
}

// emulator --test-clock moves its clock by the commands on stdin, each
// answered by a line on stdout; a delayed queue message becomes visible
// an hour on with no wait. Without the flag, stdin moves nothing.
func TestEmulatorTestClock(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	in, commands := io.Pipe()
	defer commands.Close()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"emulator", "--table-port", "0", "--queue-port", "0", "--blob-port", "0", "--silent", "--test-clock"}, in, &stdout, &stderr)
	}()
	lines := func(n int) []string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			// One read of stdout, its complete lines: reading it twice let
			// the first (empty) read pass as a line once the second found
			// the connection string written in between.
			if out := stdout.String(); strings.Count(out, "\n") >= n {
				return strings.Split(out, "\n")[:n]
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d lines on stdout within 10 s: %q; stderr: %s", n, stdout.String(), stderr.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	acct, err := tablekit.Connect(lines(1)[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	qc := acct.Queues().NewQueueClient("later")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := qc.EnqueueMessage(ctx, "in an hour", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(3600))}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	io.WriteString(commands, "advance 1h\nadvance -1s\nrewind 1h\nnow\n")
	got := lines(5)[1:]
	for i, want := range []string{"now ", `error: advance "-1s": want a positive duration`, `error: "rewind": want "advance DURATION" or "now"`, "now "} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("answer %d: %q; want %q...", i, got[i], want)
		}
	}
	if now, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(got[3], "now ")); err != nil || now.Before(before.Add(time.Hour)) {
		t.Errorf("now after advancing an hour: %q (%v); want an hour past %v", got[3], err, before)
	}
	resp, err := qc.DequeueMessages(ctx, nil)
	if err != nil || len(resp.Messages) != 1 {
		t.Errorf("receive an hour on: %v messages, %v; want the delayed one", len(resp.Messages), err)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}

	// Off by default: the same commands on stdin are not read.
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	var stdout2 syncBuffer
	go func() {
		done <- realMain(ctx2, []string{"emulator", "--table-port", "0", "--queue-port", "0", "--blob-port", "0", "--silent"}, strings.NewReader("advance 1h\nnow\n"), &stdout2, &stderr)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout2.String(), "\n"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no connection string within 10 s")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if out := stdout2.String(); strings.Count(out, "\n") != 1 {
		t.Errorf("without --test-clock, stdout: %q; want the connection string alone", out)
	}
	stop2()
	<-done
}
