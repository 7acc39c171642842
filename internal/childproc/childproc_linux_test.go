package childproc_test

import (
	"bytes"
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
	for !dead(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still runs 5 s after its parent died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dead reports whether process pid has ended: gone, or a zombie. The
// orphaned child is a zombie until the machine's init reaps it, which
// some inits do only every second or so, and kill(pid, 0) succeeds on a
// zombie.
func dead(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the
	// state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}
