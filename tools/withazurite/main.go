// Command withazurite runs a command with one Azurite for all of it: it
// starts Azurite through the integration/azurite harness (strict, as
// testenv's azurite target has it, or plain with -lenient), runs the
// command with TABLEKIT_TEST_AZURITE set to that Azurite's connection
// string, stops Azurite, and exits as the command did. `make test` runs
// the examples' and consistency's tests on Azurite this way, one go test
// of a dozen test binaries that would each start an Azurite of their own
// (about 1.5 s of CPU each, Node.js loading Azurite):
//
//	go run ./tools/withazurite -- go test -run '^Example' ./examples/...
//
// The tests share the Azurite, so each must use names of its own (tables,
// queues, containers), as testenv's names and the examples' are.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/testenv"
)

func main() {
	lenient := flag.Bool("lenient", false, "plain Azurite, without the strict proxy (testenv's azurite-lenient target)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: withazurite [-lenient] [--] command [arg...]\n\n"+
			"Runs command with %s naming one Azurite, started now and stopped after it.\n\n", testenv.EnvAzurite)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(*lenient, flag.Args(), os.Stderr))
}

// run starts Azurite, runs args with it and returns the exit code; what
// goes wrong is said on stderr.
func run(lenient bool, args []string, stderr io.Writer) int {
	// A command that cannot start is said before Azurite is.
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "withazurite: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	inst, err := azurite.Start(ctx, &azurite.Options{Strict: !lenient})
	if err != nil {
		fmt.Fprintf(stderr, "withazurite: %v\n", err)
		return 1
	}
	defer inst.Stop()
	cmd := exec.Command(path, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), testenv.EnvAzurite+"="+inst.ConnectionString)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "withazurite: %v\n", err)
		return 1
	}
	// A signal to this process goes on to the command, which ends as it
	// would without withazurite; Azurite is stopped once it has.
	waited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case <-waited:
		}
	}()
	err = cmd.Wait()
	close(waited)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintf(stderr, "withazurite: %s: %v\n", args[0], err)
		return 1
	}
}
