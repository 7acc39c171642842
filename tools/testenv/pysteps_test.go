package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// errorsOf is a testing.TB that keeps what Errorf reports.
type errorsOf struct {
	*testing.T
	got []string
}

func (e *errorsOf) Helper() {}

func (e *errorsOf) Errorf(format string, args ...any) {
	e.got = append(e.got, fmt.Sprintf(format, args...))
}

// TestPyRunSteps: a run's steps pass, or, at a listed departure, fail
// seeing exactly what is listed; anything else is reported.
func TestPyRunSteps(t *testing.T) {
	const (
		okA     = `{"step": "a", "ok": true, "saw": 1}`
		okB     = `{"step": "b", "ok": true, "saw": {"x": [1, 2]}}`
		failB   = `{"step": "b", "ok": false, "saw": {"x": [1, 2]}, "problems": ["not Azure's"]}`
		otherB  = `{"step": "b", "ok": false, "saw": {"x": [2]}}`
		raisedB = `{"step": "b", "ok": false, "error": "ValueError", "trace": ["line 1"]}`
	)
	departB := []PyDeparture{{Step: "b", Saw: `{"x": [1,2]}`, Why: "the target answers so"}}
	for _, c := range []struct {
		name       string
		lines      []string
		exit       int
		departures []PyDeparture
		want       string // in the one error reported; "" for none
	}{
		{"all pass", []string{okA, okB}, 0, nil, ""},
		{"a departure as listed", []string{okA, failB}, 1, departB, ""},
		{"a failure not listed", []string{okA, failB}, 1, nil, "step b did not see Azure's answer"},
		{"a departure that passes", []string{okA, okB}, 0, departB, "step b now passes"},
		{"a departure seeing another answer", []string{okA, otherB}, 1, departB, "saw another answer"},
		{"a step that raised", []string{okA, raisedB}, 1, departB, "step b raised"},
		{"an exit code the steps deny", []string{okA, okB}, 1, nil, "exited 1, but its steps say failed=false"},
		{"steps out of order", []string{okB, okA}, 0, nil, "ran the steps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &errorsOf{T: t}
			r := PyRun{Script: "x.py", Target: "azurite", Stdout: []byte(strings.Join(c.lines, "\n")), ExitCode: c.exit}
			if steps := r.Steps(e, []string{"a", "b"}, c.departures); len(steps) != 2 {
				t.Errorf("%d steps returned, want 2", len(steps))
			}
			switch {
			case c.want == "" && len(e.got) > 0:
				t.Errorf("reported %q, want nothing", e.got)
			case c.want != "" && (len(e.got) != 1 || !strings.Contains(e.got[0], c.want)):
				t.Errorf("reported %q, want one error saying %q", e.got, c.want)
			}
		})
	}
}
