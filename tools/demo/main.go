// Command demo runs every program under examples/ against a fresh
// tablekit emulator (package emulator, in this process: Go alone is
// enough), or with -target azurite against a fresh Azurite started through
// the integration/azurite harness. It builds
// cmd/tablekit-worker into a temporary directory and starts it
// in the background on the examples' transaction queues, points
// AZURE_STORAGE_CONNECTION_STRING at the service, runs the examples one after
// the other, shows the tablekit command exporting an example table and
// importing it into a new one, and stops everything it started. It exits
// non-zero when any example or the tablekit step fails, or the worker
// dies. `make demo` runs it.
//
// The examples that need a worker (archive, employees, orders, photos) run their
// own consistency.Worker in-process when started alone (and in their
// Example tests); the demo runs them with -external-worker so that they
// rely on the tablekit-worker process instead, as a deployment would.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	examples, err := filepath.Glob("examples/*/main.go")
	if err != nil || len(examples) == 0 {
		fmt.Fprintln(os.Stderr, "demo: no examples found; run it from the repository root (make demo)")
		return 1
	}
	sort.Strings(examples)

	target := flag.String("target", "emulator", "the service the examples run on: emulator or azurite")
	flag.Parse()
	var connStr string
	switch *target {
	case "emulator":
		fmt.Println("demo: starting tablekit's emulator")
		em, err := emulator.Start(ctx, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			return 1
		}
		defer em.Stop()
		connStr = em.ConnectionString
	case "azurite":
		fmt.Println("demo: starting Azurite", azurite.Version)
		az, err := azurite.Start(ctx, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			return 1
		}
		defer az.Stop()
		connStr = az.ConnectionString
	default:
		fmt.Fprintf(os.Stderr, "demo: -target %q: want emulator or azurite\n", *target)
		return 2
	}

	worker, err := startWorker(ctx, connStr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer worker.stop()

	failed := 0
	for _, ex := range examples {
		dir := filepath.Dir(ex)
		fmt.Printf("\n=== %s\n", filepath.Base(dir))
		start := time.Now()
		args := []string{"run", "./" + dir}
		if slices.Contains(workerQueues, filepath.Base(dir)) {
			args = append(args, externalWorker)
		}
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Env = append(os.Environ(), tablekit.EnvConnectionString+"="+connStr)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Printf("--- FAIL %s (%v): %v\n", filepath.Base(dir), time.Since(start).Round(time.Millisecond), err)
			failed++
			continue
		}
		fmt.Printf("--- ok   %s (%v)\n", filepath.Base(dir), time.Since(start).Round(time.Millisecond))
	}
	fmt.Printf("\n=== tablekit (the command)\n")
	if err := tablekitDemo(ctx, connStr); err != nil {
		fmt.Printf("--- FAIL tablekit: %v\n", err)
		failed++
	} else {
		fmt.Println("--- ok   tablekit")
	}
	if err := worker.stop(); err != nil {
		fmt.Printf("\ndemo: tablekit-worker: %v\n", err)
		return 1
	}
	if failed > 0 {
		fmt.Printf("\ndemo: %d of %d examples failed\n", failed, len(examples))
		return 1
	}
	fmt.Printf("\ndemo: all %d examples passed\n", len(examples))
	return 0
}

// externalWorker tells an example that a tablekit-worker process reads its
// queue, so it need not run a worker of its own.
const externalWorker = "-external-worker"

// workerQueues are the transaction queues of the examples that need a
// worker (each example's main names its queue after itself).
var workerQueues = []string{"archive", "employees", "orders", "photos"}

// workerProc is the background tablekit-worker.
type workerProc struct {
	cmd     *exec.Cmd
	dir     string
	exited  chan error // receives Wait's result once
	stopped bool
	err     error
}

// startWorker builds tablekit-worker into a temporary directory and
// starts it on workerQueues against connStr.
func startWorker(ctx context.Context, connStr string) (*workerProc, error) {
	dir, err := os.MkdirTemp("", "tablekit-demo-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "tablekit-worker")
	fmt.Println("demo: building ./cmd/tablekit-worker")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tablekit-worker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("build tablekit-worker: %w", err)
	}
	// Not CommandContext: on Ctrl-C the worker gets SIGTERM from stop and
	// drains, rather than being killed.
	cmd := exec.Command(bin, "run",
		"--queue", strings.Join(workerQueues, ","),
		"--poll", "200ms",
		"--metrics-addr", "",
		"--log-level", "warn",
		"--log-format", "text")
	cmd.Env = append(os.Environ(), tablekit.EnvConnectionString+"="+connStr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start tablekit-worker: %w", err)
	}
	fmt.Printf("demo: tablekit-worker running (pid %d) on queues %s\n", cmd.Process.Pid, strings.Join(workerQueues, ", "))
	w := &workerProc{cmd: cmd, dir: dir, exited: make(chan error, 1)}
	go func() { w.exited <- cmd.Wait() }()
	return w, nil
}

// stop sends SIGTERM, waits for the worker to drain (killing it after 40
// s), removes its binary and reports whether it had died before. Calling
// it again returns the first call's result.
func (w *workerProc) stop() error {
	if w.stopped {
		return w.err
	}
	w.stopped = true
	defer os.RemoveAll(w.dir)
	select {
	case err := <-w.exited:
		w.err = fmt.Errorf("exited before the demo ended: %v", err)
		return w.err
	default:
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		w.err = err
		return err
	}
	select {
	case err := <-w.exited:
		if err != nil {
			w.err = fmt.Errorf("exit after SIGTERM: %w", err)
		}
	case <-time.After(40 * time.Second):
		_ = w.cmd.Process.Kill()
		<-w.exited
		w.err = fmt.Errorf("did not stop within 40 s of SIGTERM; killed")
	}
	fmt.Println("demo: tablekit-worker stopped")
	return w.err
}
