package testenv

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
)

// With TABLEKIT_TEST_EMULATOR naming a tablekit command, the emulator runs
// as that command in a process of its own, which Stop ends; a wrong path
// is an error naming it, never a fall back to the emulator in process.
func TestEmulatorInAProcessOfItsOwn(t *testing.T) {
	t.Setenv(EnvEmulatorBinary, tablekitCommand(t))
	s, cs, _, err := startEmulator(context.Background(), nil, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s.(*emulatorProcess)
	if !ok {
		s.Stop()
		t.Fatalf("started a %T, want the emulator process", s)
	}
	acct, err := tablekit.Connect(cs, nil)
	if err != nil {
		p.Stop()
		t.Fatal(err)
	}
	if _, err := acct.Tables().CreateTable(context.Background(), "Proc", nil); err != nil {
		t.Errorf("create a table on the emulator process: %v", err)
	}
	p.Stop()
	select {
	case <-p.proc.Done():
	default:
		t.Fatal("the process runs on after Stop")
	}
	u, err := url.Parse(acct.TableEndpoint())
	if err != nil || u.Host == "" {
		t.Fatalf("table endpoint %q: %v", acct.TableEndpoint(), err)
	}
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", u.Host)
	}

	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv(EnvEmulatorBinary, missing)
	if s, _, _, err := startEmulator(context.Background(), nil, false, 0); err == nil {
		s.Stop()
		t.Fatal("started an emulator with a missing binary")
	} else if !strings.Contains(err.Error(), missing) {
		t.Errorf("err = %v, want the path %s named", err, missing)
	}
}

// tablekitCommand is a tablekit command for the tests that start the
// emulator in a process of its own: the one EnvEmulatorBinary names (make
// test builds it), else one Command builds, once for the test binary.
// Each test built its own before: a link of the command, 1.5 to 4 s of
// the package's 4 to 7, twice.
func tablekitCommand(t *testing.T) string {
	t.Helper()
	if bin := strings.TrimSpace(os.Getenv(EnvEmulatorBinary)); bin != "" {
		return bin
	}
	return Command(t, "../../cmd/tablekit")
}
