package main

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The command gets the Azurite's connection string, its exit code is
// withazurite's, and the Azurite is stopped once it has ended.
func TestRunGivesTheCommandAnAzuriteAndItsExitCode(t *testing.T) {
	testenv.Tier(t, testenv.TierAzurite)
	out := filepath.Join(t.TempDir(), "cs")
	code := run(false, []string{"sh", "-c", `printf %s "$` + testenv.EnvAzurite + `" > "$0"; exit 3`, out}, os.Stderr)
	if code != 3 {
		t.Fatalf("exit code %d, want the command's 3", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := tablekit.Connect(string(b), nil)
	if err != nil {
		t.Fatalf("the command's %s=%q: %v", testenv.EnvAzurite, b, err)
	}
	u, err := url.Parse(acct.TableEndpoint())
	if err != nil || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("table endpoint %q (%v), want a loopback Azurite", acct.TableEndpoint(), err)
	}
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the command ended", u.Host)
	}
}

// A command that cannot start is an error of withazurite's own, said
// before an Azurite is started for it.
func TestRunReportsACommandThatCannotStart(t *testing.T) {
	// An Azurite that cannot start either: had run started it first, it
	// would say so and not name the command.
	t.Setenv("TABLEKIT_AZURITE", filepath.Join(t.TempDir(), "no-azurite"))
	var stderr strings.Builder
	missing := filepath.Join(t.TempDir(), "no-such-command")
	if code := run(false, []string{missing}, &stderr); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if msg := stderr.String(); !strings.Contains(msg, missing) || strings.Contains(msg, "TABLEKIT_AZURITE") {
		t.Errorf("withazurite said %q: want the command named, and nothing of an Azurite", msg)
	}
}
