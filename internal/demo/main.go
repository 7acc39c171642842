// Command demo runs every program under examples/ against a fresh Azurite:
// it starts the emulator through the integration/azurite harness, points
// AZURE_STORAGE_CONNECTION_STRING at it, runs the examples one after the
// other, and stops everything it started. It exits non-zero when any
// example fails. `make demo` runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/integration/azurite"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	examples, err := filepath.Glob("examples/*/main.go")
	if err != nil || len(examples) == 0 {
		fmt.Fprintln(os.Stderr, "demo: no examples found; run it from the repository root (make demo)")
		return 1
	}
	sort.Strings(examples)

	fmt.Println("demo: starting Azurite", azurite.Version)
	az, err := azurite.Start(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer az.Stop()

	failed := 0
	for _, ex := range examples {
		dir := filepath.Dir(ex)
		fmt.Printf("\n=== %s\n", filepath.Base(dir))
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "run", "./"+dir)
		cmd.Env = append(os.Environ(), tablekit.EnvConnectionString+"="+az.ConnectionString)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Printf("--- FAIL %s (%v): %v\n", filepath.Base(dir), time.Since(start).Round(time.Millisecond), err)
			failed++
			continue
		}
		fmt.Printf("--- ok   %s (%v)\n", filepath.Base(dir), time.Since(start).Round(time.Millisecond))
	}
	if failed > 0 {
		fmt.Printf("\ndemo: %d of %d examples failed\n", failed, len(examples))
		return 1
	}
	fmt.Printf("\ndemo: all %d examples passed\n", len(examples))
	return 0
}
