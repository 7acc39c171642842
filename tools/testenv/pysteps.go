package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// PyStep is one line a Python tier script prints (emulator/_pyinterop:
// steps.py prints them for https.py and durable.py, interop.py in the
// same form): the step's name, whether it was ok, what it saw, the
// problems it found, and the exception and trace when it raised.
type PyStep struct {
	Step     string          `json:"step"`
	OK       bool            `json:"ok"`
	MS       int             `json:"ms"`
	Saw      json.RawMessage `json:"saw"`
	Error    json.RawMessage `json:"error"`
	Trace    []string        `json:"trace"`
	Problems []string        `json:"problems"`
}

// PyDeparture is a step a Python tier script fails on Azurite because
// Azurite answers otherwise than Azure: what the step sees there (a JSON
// value, compared as a value), and why, with the evidence of both
// answers.
type PyDeparture struct{ Step, Saw, Why string }

// PySteps reads the steps script printed on stdout and exited with
// (exitCode: 0 when every step was ok, 1 when one was not, anything else
// a script that could not run, which is fatal). It fails t for each step
// that raised or was not ok, for an exit code that disagrees with the
// steps, and unless the steps ran are want, in order; it returns them.
func PySteps(t testing.TB, script string, stdout, stderr []byte, exitCode int, want []string) []PyStep {
	t.Helper()
	return PyRun{Script: script, Target: "emulator", Stdout: stdout, Stderr: stderr, ExitCode: exitCode}.Steps(t, want, nil)
}

// Steps is PySteps for the run r, on a target that departs from Azure at
// the steps of departures: such a step must fail seeing exactly its Saw,
// and fails t when it passes or sees anything else; every other step
// must pass.
func (r PyRun) Steps(t testing.TB, want []string, departures []PyDeparture) []PyStep {
	t.Helper()
	if r.ExitCode != 0 && r.ExitCode != 1 {
		t.Fatalf("%s exited %d\nstderr:\n%s\nstdout:\n%s", r.Script, r.ExitCode, r.Stderr, r.Stdout)
	}
	differs := map[string]string{}
	for _, d := range departures {
		differs[d.Step] = d.Saw
	}
	var steps []PyStep
	var names []string
	failed := false
	sc := bufio.NewScanner(bytes.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var s PyStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.Step == "" {
			t.Fatalf("%s printed a line that is not a step (%v): %s", r.Script, err, sc.Text())
		}
		steps = append(steps, s)
		names = append(names, s.Step)
		failed = failed || !s.OK
		saw, listed := differs[s.Step]
		switch {
		case len(s.Error) > 0:
			t.Errorf("%s: step %s raised %s\n  %s", r.Script, s.Step, s.Error, strings.Join(s.Trace, "\n  "))
		case !listed && !s.OK:
			t.Errorf("%s on %s: step %s did not see Azure's answer:\n  %s\n  saw: %s",
				r.Script, r.Target, s.Step, strings.Join(s.Problems, "\n  "), s.Saw)
		case listed && s.OK:
			t.Errorf("%s on %s: step %s now passes: take it out of the departures listed", r.Script, r.Target, s.Step)
		case listed && !sameJSON(s.Saw, saw):
			t.Errorf("%s on %s: step %s, a departure listed, saw another answer:\n  saw  %s\n  want %s", r.Script, r.Target, s.Step, s.Saw, saw)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s's output: %v", r.Script, err)
	}
	if failed != (r.ExitCode == 1) {
		t.Errorf("%s exited %d, but its steps say failed=%v\nstderr:\n%s", r.Script, r.ExitCode, failed, r.Stderr)
	}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("%s ran the steps\n  %v\nwant\n  %v\nstderr:\n%s", r.Script, names, want, r.Stderr)
	}
	return steps
}

// sameJSON says whether a and b hold the same JSON value.
func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
