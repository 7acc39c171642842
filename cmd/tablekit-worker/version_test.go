package main

import (
	"bytes"
	debugbuildinfo "debug/buildinfo"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/tablekit/tablekit/internal/buildinfo"
)

// TestVersion runs the built worker: --version prints the version its
// build information gives (the label of its /metrics'
// tablekit_worker_build_info) and needs no account.
func TestVersion(t *testing.T) {
	bin := builtBinary(t)
	bi, err := debugbuildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("build information of %s: %v", bin, err)
	}
	want := "tablekit-worker " + buildinfo.Format(bi) + "\n"
	if !regexp.MustCompile(`^tablekit-worker (v\d+\.\d+\.\d+\S*|\(devel\))( [0-9a-f]{1,12})?(\+dirty)?\n$`).MatchString(want) {
		t.Fatalf("the build information gives %q, not a version", want)
	}
	for _, args := range [][]string{{"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		// No account: --version connects to nothing. GORACE, which
		// testenv.Main sets under -race, spares each run the race
		// detector's second of sleep at exit.
		cmd.Env = []string{}
		if g, ok := os.LookupEnv("GORACE"); ok {
			cmd.Env = []string{"GORACE=" + g}
		}
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || out.String() != want || errOut.Len() != 0 {
			t.Errorf("tablekit-worker %v: %v, stdout %q, stderr %q; want exit 0 and %q", args, err, out.String(), errOut.String(), want)
		}
	}
}
