package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/internal/childproc"
)

// EnvEmulatorBinary names a tablekit command built without the race
// detector (make test builds one). When it is set, the emulators testenv
// starts run in a process of their own (`tablekit emulator`) instead of in
// the test binary: under -race an emulator in the test binary is
// race-instrumented too, which costs the storage tests CPU they would
// rather spend on tablekit.
// The emulator's own packages test it under -race in process.
const EnvEmulatorBinary = "TABLEKIT_TEST_EMULATOR"

// emulatorProcess is `tablekit emulator` running as a child process.
type emulatorProcess struct {
	proc     *childproc.Process
	stopOnce sync.Once
}

// Stop ends the process (SIGTERM, then SIGKILL after 5 s).
func (p *emulatorProcess) Stop() error {
	p.stopOnce.Do(func() { p.proc.Stop(5 * time.Second) })
	return nil
}

// startEmulator starts an emulator, ending pages early as ee says (nil:
// never): in a process of its own when EnvEmulatorBinary is set, else in
// the test binary.
func startEmulator(ctx context.Context, ee *emulator.EarlyEnd) (interface{ Stop() error }, string, error) {
	bin := strings.TrimSpace(os.Getenv(EnvEmulatorBinary))
	if bin == "" {
		inst, err := emulator.Start(ctx, &emulator.Options{EarlyEnd: ee})
		if err != nil {
			return nil, "", err
		}
		return inst, inst.ConnectionString, nil
	}
	args := []string{"emulator", "--silent", "--blob-port", "0", "--queue-port", "0", "--table-port", "0"}
	if ee != nil {
		args = append(args, "--early-end", strconv.FormatFloat(ee.Probability, 'g', -1, 64), "--seed", strconv.FormatInt(ee.Seed, 10))
	}
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	proc, err := childproc.Start(cmd)
	if err != nil {
		return nil, "", fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, err)
	}
	p := &emulatorProcess{proc: proc}
	// The command prints its connection string as its first line.
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
		}
	}()
	select {
	case cs, ok := <-line:
		if ok && strings.Contains(cs, "TableEndpoint=") {
			return p, cs, nil
		}
		p.Stop()
		return nil, "", fmt.Errorf("%s=%s: `emulator` printed %q, not a connection string: %s", EnvEmulatorBinary, bin, cs, cmd.Stderr)
	case <-ctx.Done():
		p.Stop()
		return nil, "", fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, ctx.Err())
	case <-time.After(30 * time.Second):
		p.Stop()
		return nil, "", fmt.Errorf("%s=%s: no connection string within 30 s: %s", EnvEmulatorBinary, bin, cmd.Stderr)
	}
}

// startEmulatorTB is startEmulator for one test: the emulator stops when
// the test ends.
func startEmulatorTB(t testing.TB, ee *emulator.EarlyEnd) string {
	t.Helper()
	s, cs, err := startEmulator(context.Background(), ee)
	if err != nil {
		t.Fatalf("testenv: cannot start the emulator: %v", err)
	}
	t.Cleanup(func() { s.Stop() })
	return cs
}

// lockedWriter serializes writes to w and reads of it.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.w.String())
}
