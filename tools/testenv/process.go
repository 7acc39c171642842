package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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

	// With --test-clock: the process's stdin and the lines it answers.
	clockMu  sync.Mutex
	clockIn  io.WriteCloser
	clockOut chan string
}

// Stop ends the process (SIGTERM, then SIGKILL after 5 s).
func (p *emulatorProcess) Stop() error {
	p.stopOnce.Do(func() { p.proc.Stop(5 * time.Second) })
	return nil
}

// gcEnv is "GOGC=..." when Main set the test binary's garbage collector
// target (TestGCPercent), for the emulator process it starts; else "".
var gcEnv string

// startEmulator starts an emulator, ending pages early as ee says (nil:
// never): in a process of its own when EnvEmulatorBinary is set, else in
// the test binary. With testClock, its clock can be moved: advance moves
// it (`tablekit emulator --test-clock` in a process of its own); else
// advance is nil. A clockRate above 1 runs its clock that many times as
// fast as real time (emulator.Options.ClockRate, --clock-rate).
func startEmulator(ctx context.Context, ee *emulator.EarlyEnd, testClock bool, clockRate float64) (s interface{ Stop() error }, connStr string, advance func(time.Duration) error, err error) {
	bin := strings.TrimSpace(os.Getenv(EnvEmulatorBinary))
	if bin == "" {
		inst, err := emulator.Start(ctx, &emulator.Options{EarlyEnd: ee, ClockRate: clockRate})
		if err != nil {
			return nil, "", nil, err
		}
		if testClock {
			advance = func(d time.Duration) error { inst.Advance(d); return nil }
		}
		return inst, inst.ConnectionString, advance, nil
	}
	args := []string{"emulator", "--silent", "--blob-port", "0", "--queue-port", "0", "--table-port", "0"}
	if ee != nil {
		args = append(args, "--early-end", strconv.FormatFloat(ee.Probability, 'g', -1, 64), "--seed", strconv.FormatInt(ee.Seed, 10))
	}
	if testClock {
		args = append(args, "--test-clock")
	}
	if clockRate != 0 {
		args = append(args, "--clock-rate", strconv.FormatFloat(clockRate, 'g', -1, 64))
	}
	cmd := exec.Command(bin, args...)
	if gcEnv != "" {
		cmd.Env = append(os.Environ(), gcEnv)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, err)
	}
	p := &emulatorProcess{}
	if testClock {
		if p.clockIn, err = cmd.StdinPipe(); err != nil {
			return nil, "", nil, fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, err)
		}
		p.clockOut = make(chan string, 1)
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if p.proc, err = childproc.Start(cmd); err != nil {
		return nil, "", nil, fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, err)
	}
	// The command prints its connection string as its first line, then
	// answers the clock's commands a line each.
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
			if p.clockOut != nil {
				p.clockOut <- sc.Text()
			}
		}
		if p.clockOut != nil {
			close(p.clockOut)
		}
	}()
	select {
	case cs, ok := <-line:
		if ok && strings.Contains(cs, "TableEndpoint=") {
			if testClock {
				advance = p.advance
			}
			return p, cs, advance, nil
		}
		p.Stop()
		return nil, "", nil, fmt.Errorf("%s=%s: `emulator` printed %q, not a connection string: %s", EnvEmulatorBinary, bin, cs, cmd.Stderr)
	case <-ctx.Done():
		p.Stop()
		return nil, "", nil, fmt.Errorf("%s=%s: %w", EnvEmulatorBinary, bin, ctx.Err())
	case <-time.After(30 * time.Second):
		p.Stop()
		return nil, "", nil, fmt.Errorf("%s=%s: no connection string within 30 s: %s", EnvEmulatorBinary, bin, cmd.Stderr)
	}
}

// advance moves the process's clock forward by d (--test-clock) and
// returns once the process says it has.
func (p *emulatorProcess) advance(d time.Duration) error {
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	if _, err := fmt.Fprintf(p.clockIn, "advance %s\n", d); err != nil {
		return fmt.Errorf("advance the emulator process's clock: %w", err)
	}
	select {
	case ans, ok := <-p.clockOut:
		if !ok {
			return errors.New("advance the emulator process's clock: it closed its stdout")
		}
		if !strings.HasPrefix(ans, "now ") {
			return fmt.Errorf("advance the emulator process's clock: it answered %q", ans)
		}
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("advance the emulator process's clock: no answer within 10 s")
	}
}

// startEmulatorTB is startEmulator for one test: the emulator stops when
// the test ends.
func startEmulatorTB(t testing.TB, ee *emulator.EarlyEnd) string {
	t.Helper()
	s, cs, _, err := startEmulator(context.Background(), ee, false, 0)
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
