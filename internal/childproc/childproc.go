// Package childproc starts the helper processes of tablekit's tests and
// harnesses (Azurite, tablekit's emulator) so that they do not outlive
// the process that started them: on Linux a child gets SIGKILL when its
// parent dies (Pdeathsig), so a crashed or killed test binary leaves no
// server behind on the machine's ports.
package childproc

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Process is a started child process.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd. The process is started from a goroutine locked to its
// OS thread that lives as long as the process: Pdeathsig fires when the
// thread that started the child ends, so that thread must not end early.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		setParentDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
		// The thread stays locked: the goroutine exits and the thread
		// with it, which is fine now that the child is gone.
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("childproc: starting %s: %w", cmd.Path, err)
	}
	return p, nil
}

// Done is closed when the process has exited; Err then returns how.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns what waiting for the process returned (nil for a clean exit).
// It is meaningful once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop asks the process to end (SIGTERM), kills it (SIGKILL) when it has
// not ended after grace, and returns once it has exited. It is safe to
// call more than once, and after the process has exited.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
