package emulator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	if code := cmd.ProcessState.ExitCode(); runErr != nil && code != 1 {
		t.Fatalf("%s: %v\nstderr:\n%s", script, runErr, stderr.String())
	}
	testenv.PySteps(t, "https.py", stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode(),
		[]string{"https.sharedKey", "https.bearer", "https.expired"})
}
