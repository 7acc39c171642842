package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The Python SDK through user delegation SAS: _pyinterop/delegation.py
// gets a user delegation key with a bearer token, signs a blob SAS with
// it (generate_blob_sas(user_delegation_key=...)), reads through it, and
// is refused a write, a delete and another blob, and a read once the key
// has expired; on the emulator and on Azurite 3.37, both over HTTPS with
// --oauth basic and one certificate the script trusts through
// REQUESTS_CA_BUNDLE. On the emulator the key expires as the test moves
// the emulator's clock (Instance.Advance) when the script asks; on
// Azurite it takes a key two seconds long and waits.
func TestPythonDelegation(t *testing.T) {
	testenv.Tier(t, testenv.TierPython)
	py := testenv.Python(t)
	script, err := filepath.Abs("_pyinterop/delegation.py")
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
	cert, key := filepath.Join(dir, emulator.CertFile), filepath.Join(dir, emulator.KeyFile)
	t.Run("emulator", func(t *testing.T) {
		em := emulator.StartTB(t, &emulator.Options{CertFile: cert, KeyFile: key, OAuth: emulator.OAuthBasic})
		runDelegation(t, py, script, dir, em.BlobURL, em.AccountKey, "emulator", em.Advance)
	})
	t.Run("azurite", func(t *testing.T) {
		testenv.Tier(t, testenv.TierAzurite)
		az := azurite.StartTB(t, &azurite.Options{CertFile: cert, KeyFile: key, OAuth: "basic"})
		runDelegation(t, py, script, dir, az.BlobURL, azurite.AccountKey, "azurite", nil)
	})
}

// runDelegation runs delegation.py against the Blob endpoint blobURL of
// target (its account's key accountKey), trusting dir's ca.pem. With
// advance, the script's clock requests ("advance DURATION" on its file
// descriptor 3) move the target's clock and are answered on its stdin
// ("now TIME"), as tablekit emulator --test-clock answers them.
func runDelegation(t *testing.T, py, script, dir, blobURL, accountKey, target string, advance func(time.Duration)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Env = append(os.Environ(), "TABLEKIT_BLOB_URL="+blobURL, "TABLEKIT_ACCOUNT_KEY="+accountKey, "TABLEKIT_TARGET="+target,
		"REQUESTS_CA_BUNDLE="+filepath.Join(dir, emulator.CAFile), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var clock *os.File
	moved := make(chan struct{})
	if advance != nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		clock = r
		cmd.ExtraFiles = []*os.File{w}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		go func() {
			defer close(moved)
			defer stdin.Close()
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				d, err := time.ParseDuration(strings.TrimPrefix(sc.Text(), "advance "))
				if err != nil || !strings.HasPrefix(sc.Text(), "advance ") {
					fmt.Fprintf(stdin, "error: %q is not advance DURATION\n", sc.Text())
					continue
				}
				advance(d)
				fmt.Fprintf(stdin, "now %s\n", time.Now().UTC().Format(time.RFC3339))
			}
		}()
	} else {
		close(moved)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if len(cmd.ExtraFiles) > 0 {
		cmd.ExtraFiles[0].Close() // the script's end; the reader sees EOF when it exits
	}
	runErr := cmd.Wait()
	if clock != nil {
		<-moved
		clock.Close()
	}
	if code := cmd.ProcessState.ExitCode(); runErr != nil && code != 1 {
		t.Fatalf("%s on %s: %v\nstderr:\n%s", script, target, runErr, stderr.String())
	}
	steps := testenv.PySteps(t, "delegation.py ("+target+")", stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode(),
		[]string{"delegation.key", "delegation.read", "delegation.refused", "delegation.expired"})
	times := make([]string, 0, len(steps))
	for _, s := range steps {
		times = append(times, fmt.Sprintf("%s %d ms", s.Step, s.MS))
	}
	t.Logf("delegation.py on %s ran in %v: %s", target, time.Since(start).Round(time.Millisecond), strings.Join(times, ", "))
}
