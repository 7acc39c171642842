package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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

// PySteps reads the steps script printed on stdout and exited with
// (exitCode: 0 when every step was ok, 1 when one was not, anything else
// a script that could not run, which is fatal). It fails t for each step
// that raised or was not ok, for an exit code that disagrees with the
// steps, and unless the steps ran are want, in order; it returns them.
func PySteps(t testing.TB, script string, stdout, stderr []byte, exitCode int, want []string) []PyStep {
	t.Helper()
	if exitCode != 0 && exitCode != 1 {
		t.Fatalf("%s exited %d\nstderr:\n%s\nstdout:\n%s", script, exitCode, stderr, stdout)
	}
	var steps []PyStep
	var names []string
	failed := false
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var s PyStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.Step == "" {
			t.Fatalf("%s printed a line that is not a step (%v): %s", script, err, sc.Text())
		}
		steps = append(steps, s)
		names = append(names, s.Step)
		failed = failed || !s.OK
		switch {
		case len(s.Error) > 0:
			t.Errorf("%s: step %s raised %s\n  %s", script, s.Step, s.Error, strings.Join(s.Trace, "\n  "))
		case !s.OK:
			t.Errorf("%s: step %s: the emulator did not answer as Azure does:\n  %s\n  saw: %s", script, s.Step, strings.Join(s.Problems, "\n  "), s.Saw)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s's output: %v", script, err)
	}
	if failed != (exitCode == 1) {
		t.Errorf("%s exited %d, but its steps say failed=%v\nstderr:\n%s", script, exitCode, failed, stderr)
	}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("%s ran the steps\n  %v\nwant\n  %v\nstderr:\n%s", script, names, want, stderr)
	}
	return steps
}
