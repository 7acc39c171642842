package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The Python SDK over HTTPS: _pyinterop/https.py trusts the emulator's CA
// through REQUESTS_CA_BUNDLE, as a Python user would, and uses Shared Key
// and a bearer token on the three services; an expired token is refused
// 401 InvalidAuthenticationInfo.
func TestPythonInteropHTTPS(t *testing.T) {
	testenv.Tier(t, testenv.TierPython)
	py := testenv.Python(t)
	script, err := filepath.Abs("_pyinterop/https.py")
	if err != nil {
		t.Fatal(err)
	}
	c, err := emulator.NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := c.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	em := emulator.StartTB(t, &emulator.Options{CertFile: filepath.Join(dir, emulator.CertFile),
		KeyFile: filepath.Join(dir, emulator.KeyFile), OAuth: emulator.OAuthBasic})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Env = append(os.Environ(), "TABLEKIT_CONNECTION_STRING="+em.ConnectionString,
		"REQUESTS_CA_BUNDLE="+filepath.Join(dir, emulator.CAFile), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 0 && code != 1 {
		t.Fatalf("%s: %v (exit %d)\nstderr:\n%s\nstdout:\n%s", script, runErr, code, stderr.String(), stdout.String())
	}
	var got []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var s pyStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.Step == "" {
			t.Fatalf("https.py printed a line that is not a step (%v): %s", err, sc.Text())
		}
		got = append(got, s.Step)
		switch {
		case len(s.Error) > 0:
			t.Errorf("step %s raised %s\n  %s", s.Step, s.Error, strings.Join(s.Trace, "\n  "))
		case !s.OK:
			t.Errorf("step %s:\n  %s\n  saw: %s", s.Step, strings.Join(s.Problems, "\n  "), s.Saw)
		}
	}
	if want := "https.sharedKey https.bearer https.expired"; strings.Join(got, " ") != want {
		t.Errorf("https.py ran %v, want %s\nstderr:\n%s", got, want, stderr.String())
	}
}
