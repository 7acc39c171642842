package emulator_test

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
)

// Stop returns at once when no request is in flight, however many
// connections the client keeps: concurrent writes leave the SDK's
// transport with idle connections and dialled ones that never sent a
// request, which Go's server counts as busy for 5 s, and a test's
// cleanup waited 2 s for them.
func TestStopIsPromptWhenIdle(t *testing.T) {
	const runs, writers = 100, 8
	ctx := context.Background()
	var worst time.Duration
	for run := range runs {
		em, err := emulator.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tbl := openTable(t, em.ConnectionString, nil)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range 3 {
					v := row{PartitionKey: "p", RowKey: fmt.Sprintf("r%d", w), N: n}
					if err := tbl.Upsert(ctx, &v, nil); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("run %d: %v", run, err)
		}
		start := time.Now()
		if err := em.Stop(); err != nil {
			t.Fatalf("run %d: Stop: %v", run, err)
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("Stop's longest of %d runs: %v", runs, worst)
	// 50 ms is the promise; the bound is looser for a loaded machine,
	// and still far under the 2 s that Stop used to wait.
	if worst > 500*time.Millisecond {
		t.Errorf("Stop took %v at most over %d runs, want 50 ms", worst, runs)
	}
}

// Stop still waits for a request in flight, and its client gets the
// answer. The server holds the request for latency from when it read it,
// after the client wrote it: Stop, which must wait for the answer,
// returns no sooner than latency after the write, however slow the
// machine. (The table is created through DirectTableURL, which does not
// wait the latency.)
//
// The test must call Stop while the request is held. On a loaded machine
// (make test under -race, load 10) its goroutine was once not scheduled
// for the whole 200 ms hold, and the request was answered before the test
// saw it in flight: then the scenario runs again, holding the request
// four times as long.
func TestStopWaitsForRequestInFlight(t *testing.T) {
	t.Parallel()
	for latency := 200 * time.Millisecond; ; latency *= 4 {
		if stopWaitsForRequestInFlight(t, latency) {
			return
		}
		if latency >= 10*time.Second {
			t.Fatalf("the request was answered before the test saw it in flight, held %v", latency)
		}
		t.Logf("the request, held %v, was answered before the test saw it in flight; again with a longer hold", latency)
	}
}

// stopWaitsForRequestInFlight runs the scenario once with the server
// holding each request for latency. It reports false when the request
// was answered before the test saw it in flight (Stop not tried).
func stopWaitsForRequestInFlight(t *testing.T, latency time.Duration) bool {
	em, err := emulator.Start(context.Background(), &emulator.Options{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Stop()
	directRows(t, em)
	tbl := openTableWith(t, em.ConnectionString, nil, false)
	wrote := make(chan time.Time, 1)
	var once sync.Once
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { wrote <- time.Now() }) },
	})
	done := make(chan error, 1)
	go func() { done <- tbl.Upsert(ctx, &row{PartitionKey: "p", RowKey: "r", N: 1}, nil) }()
	sent := <-wrote
	// The request is on the wire; once the server has begun to read it,
	// it holds it for latency. (Before, Stop closes the connection as one
	// with no request, and the client's retries find no server: a sleep
	// of 50 ms was not always enough under -race beside other tests.)
	// TableURL's server only: DirectTableURL's may not yet have marked
	// the create's connection idle.
	for emulator.ActiveConns(em, em.TableURL) == 0 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the request, before Stop: %v", err)
			}
			return false
		default:
		}
		if time.Since(sent) > 10*time.Second+latency {
			t.Fatal("the server has not begun to read the request 10 s after it was sent")
		}
		time.Sleep(time.Millisecond)
	}
	if err := em.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(sent); took < latency {
		t.Errorf("Stop returned %v after the request was sent, before the request in flight was answered (%v)", took, latency)
	}
	if err := <-done; err != nil {
		t.Fatalf("the request in flight during Stop: %v", err)
	}
	return true
}
