package childproc_test

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A child does not outlive its parent: on Linux it gets SIGKILL when the
// parent dies without stopping it.
func TestChildDiesWithItsParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), envHelper+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(string(out))
	if err != nil {
		t.Fatalf("helper printed %q, want the child's pid", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still runs 5 s after its parent died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
