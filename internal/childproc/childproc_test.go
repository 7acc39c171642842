package childproc_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/childproc"
)

// envHelper makes the test binary, run again, start a child and exit.
const envHelper = "CHILDPROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "1" {
		p, err := childproc.Start(exec.Command("sleep", "60"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_ = p
		// The child's pid, then this process dies without stopping it.
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "sleep").Output()
		fmt.Print(strings.TrimSpace(string(out)))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestStopEndsTheProcess(t *testing.T) {
	p, err := childproc.Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.Stop(5 * time.Second)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %v: SIGTERM should end sleep at once", d)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done is open after Stop returned")
	}
	if p.Err() == nil {
		t.Error("Err is nil for a process ended by SIGTERM")
	}
	p.Stop(time.Second) // a second Stop returns at once
}

func TestStartNamesAMissingCommand(t *testing.T) {
	_, err := childproc.Start(exec.Command("/nonexistent/tablekit-emulator"))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/tablekit-emulator") {
		t.Fatalf("err = %v, want one naming the command", err)
	}
}
