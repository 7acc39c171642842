package testenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
)

// PyTimeout bounds one run of a Python tier script.
const PyTimeout = 2 * time.Minute

// PyScript is a Python tier script (emulator/_pyinterop) and the targets
// a test runs it on: a new emulator and, with OnAzurite, a new Azurite
// 3.37. Each run is given its target's connection string in
// TABLEKIT_CONNECTION_STRING and its name, emulator or azurite, in
// TABLEKIT_TARGET.
type PyScript struct {
	// Path is the script, relative to the test's directory.
	Path string
	// Steps are the steps it runs, in order.
	Steps []string
	// OnAzurite runs it on Azurite too, when the azurite tier is asked
	// for: Run's subtests are then "emulator" and "azurite", at once.
	OnAzurite bool
	// Departures are the steps Azurite answers otherwise than Azure:
	// each must fail there seeing exactly its Saw (PyRun.Steps). A
	// script may instead hold Azurite's answers itself, by
	// TABLEKIT_TARGET.
	Departures []PyDeparture
	// HTTPS serves each target over HTTPS with one new certificate, which
	// the script trusts through REQUESTS_CA_BUNDLE, and OAuth with it
	// accepts bearer tokens too (Options.OAuth: basic).
	HTTPS, OAuth bool
	// Clock lets the script move the emulator's clock: on the emulator it
	// finds file descriptor 3 open, writes "advance DURATION" there and
	// reads "now TIME" (the emulator's time after it) on its stdin, as
	// tablekit emulator --test-clock answers; on Azurite it is not open.
	Clock bool
}

// Run runs the script on its targets, each in a subtest, and fails t
// unless every step passes (or, on Azurite, departs as listed). It
// needs the python tier (Tier), which Run checks first.
func (p PyScript) Run(t *testing.T) {
	t.Helper()
	Tier(t, TierPython)
	py := Python(t)
	script, err := filepath.Abs(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	var eo emulator.Options
	var ao azurite.Options
	if p.HTTPS {
		c, err := emulator.NewCertificate()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := c.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		eo.CertFile, eo.KeyFile = filepath.Join(dir, emulator.CertFile), filepath.Join(dir, emulator.KeyFile)
		ao.CertFile, ao.KeyFile = eo.CertFile, eo.KeyFile
		env = append(env, "REQUESTS_CA_BUNDLE="+filepath.Join(dir, emulator.CAFile))
	}
	if p.OAuth {
		eo.OAuth, ao.OAuth = emulator.OAuthBasic, "basic"
	}
	run := func(t *testing.T, target, conn string, clock *emulator.Instance) {
		r := RunPython(t, py, script, &PyOptions{Env: append(slices.Clip(env), "TABLEKIT_CONNECTION_STRING="+conn, "TABLEKIT_TARGET="+target), Clock: clock})
		r.Target = target
		var departures []PyDeparture
		if target == "azurite" {
			departures = p.Departures
		}
		steps := r.Steps(t, p.Steps, departures)
		times := make([]string, 0, len(steps))
		for _, s := range steps {
			times = append(times, fmt.Sprintf("%s %d ms", s.Step, s.MS))
		}
		t.Logf("%s on %s ran in %v: %s", r.Script, target, r.Took.Round(time.Millisecond), strings.Join(times, ", "))
	}
	t.Run("emulator", func(t *testing.T) {
		if p.OnAzurite {
			t.Parallel()
		}
		em := emulator.StartTB(t, &eo)
		var clock *emulator.Instance
		if p.Clock {
			clock = em
		}
		run(t, "emulator", em.ConnectionString, clock)
	})
	if p.OnAzurite {
		t.Run("azurite", func(t *testing.T) {
			Tier(t, TierAzurite)
			t.Parallel()
			run(t, "azurite", azurite.StartTB(t, &ao).ConnectionString, nil)
		})
	}
}

// PyRun is one run of a Python tier script: what it printed, its exit
// code and how long it took.
type PyRun struct {
	// Script is the script's file name, and Target where it ran, for
	// messages.
	Script, Target string
	Stdout, Stderr []byte
	ExitCode       int
	Took           time.Duration
}

// PyOptions are how RunPython runs a script; nil means none of them.
type PyOptions struct {
	// Args are the script's arguments.
	Args []string
	// Env is added to the test's environment.
	Env []string
	// Clock, when set, is the emulator whose clock the script moves
	// (PyScript.Clock).
	Clock *emulator.Instance
}

// PyOutput is what a running Python tier script prints.
type PyOutput struct{ Stdout, Stderr bytes.Buffer }

// String is the output, for a failure's message.
func (o *PyOutput) String() string {
	return "stdout:\n" + o.Stdout.String() + "stderr:\n" + o.Stderr.String()
}

// PyCommand returns the command that runs script with py and args,
// stopped after PyTimeout (or when t ends), its environment the test's
// with env added and PYTHONDONTWRITEBYTECODE=1 (a run leaves no
// __pycache__ beside the script), its output in the PyOutput returned.
// The caller starts it.
func PyCommand(t testing.TB, py, script string, env []string, args ...string) (*exec.Cmd, *PyOutput) {
	ctx, cancel := context.WithTimeout(context.Background(), PyTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, py, append([]string{script}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), "PYTHONDONTWRITEBYTECODE=1")
	out := &PyOutput{}
	cmd.Stdout, cmd.Stderr = &out.Stdout, &out.Stderr
	return cmd, out
}

// RunPython runs script with py to its end (PyCommand) and returns what
// it printed; a script that cannot start, or exits otherwise than 0 (its
// steps passed) or 1 (one did not), fails t at once.
func RunPython(t testing.TB, py, script string, o *PyOptions) PyRun {
	t.Helper()
	if o == nil {
		o = &PyOptions{}
	}
	cmd, out := PyCommand(t, py, script, o.Env, o.Args...)
	var serveClock func() (wait func())
	if o.Clock != nil {
		serveClock = clockPipe(t, cmd, o.Clock)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s %s: %v", py, script, err)
	}
	clockDone := func() {}
	if serveClock != nil {
		clockDone = serveClock()
	}
	err := cmd.Wait()
	clockDone()
	r := PyRun{Script: filepath.Base(script), Stdout: out.Stdout.Bytes(), Stderr: out.Stderr.Bytes(),
		ExitCode: cmd.ProcessState.ExitCode(), Took: time.Since(start)}
	if err != nil && r.ExitCode != 1 {
		t.Fatalf("%s %s: %v\n%s", py, script, err, out)
	}
	return r
}

// clockPipe gives cmd, not yet started, file descriptor 3 for its clock
// requests (PyScript.Clock) and a pipe on its stdin for the answers. Call
// serve once cmd has started: it serves the requests until the script
// ends, and wait, after cmd.Wait, returns once the last is answered.
func clockPipe(t testing.TB, cmd *exec.Cmd, em *emulator.Instance) (serve func() (wait func())) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() }) // a second Close does nothing
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{w}
	return func() func() {
		w.Close() // the script holds its own copy: the reader sees EOF when it exits
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer stdin.Close()
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				d, err := time.ParseDuration(strings.TrimPrefix(sc.Text(), "advance "))
				if err != nil || !strings.HasPrefix(sc.Text(), "advance ") {
					fmt.Fprintf(stdin, "error: %q is not advance DURATION\n", sc.Text())
					continue
				}
				em.Advance(d)
				fmt.Fprintf(stdin, "now %s\n", em.Now().UTC().Format(time.RFC3339Nano))
			}
		}()
		return func() { <-done }
	}
}
