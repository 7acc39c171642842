package main

import (
	"bytes"
	"context"
	debugbuildinfo "debug/buildinfo"
	"os/exec"
	"regexp"
	"testing"

	"github.com/tablekit/tablekit/internal/buildinfo"
)

// versionLine is the form of "tablekit version": a module version or
// (devel), maybe a commit and +dirty.
var versionLine = regexp.MustCompile(`^tablekit (v\d+\.\d+\.\d+\S*|\(devel\))( [0-9a-f]{1,12})?(\+dirty)?\n$`)

// TestVersion runs the built command: "tablekit version" and "tablekit
// --version" print the version its build information gives, the string a
// backup manifest records.
func TestVersion(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	bi, err := debugbuildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("build information of %s: %v", bin, err)
	}
	want := "tablekit " + buildinfo.Format(bi) + "\n"
	if !versionLine.MatchString(want) {
		t.Fatalf("the build information gives %q, not a version", want)
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || out.String() != want || errOut.Len() != 0 {
			t.Errorf("tablekit %v: %v, stdout %q, stderr %q; want exit 0 and %q", args, err, out.String(), errOut.String(), want)
		}
	}
	var out, errOut bytes.Buffer
	if code := realMain(context.Background(), []string{"version", "extra"}, nil, &out, &errOut); code != 2 {
		t.Errorf("tablekit version extra: exit %d, want 2 (usage)", code)
	}
}
