// Package tier switches on the tests that need more than Go: Node.js and
// Azurite, the JavaScript SDK, Python and the Azure SDK for Python. A
// tier runs when Env asks for it, and then fails with the command that
// installs what it needs when that is missing, instead of skipping.
//
// tools/testenv's Tier and Python are Require and FindPython. The tests
// of the Azurite harness call Require themselves: tools/testenv imports
// the harness, so a harness test binary holding it compiled tools/testenv
// a second time, against the harness's in-package tests.
package tier

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/integration/azurite"
)

// Env switches on the tests that need more than Go: a comma-separated
// list of tiers (Azurite, JS, Python) or "all". make test sets it to all.
const Env = "TABLEKIT_TEST_TIERS"

// The tiers Env names.
const (
	// Azurite is the tests that compare the emulator with Azurite or test
	// the Azurite harness itself: they need Node.js and the pinned Azurite
	// (`make azurite-install`).
	Azurite = "azurite"
	// JS is the JavaScript SDK interop test: it needs Node.js, the pinned
	// JS SDK (`make jsinterop-install`) and the pinned Azurite.
	JS = "js"
	// Python is the Python SDK interop test: it needs Python 3 and the
	// Azure SDK for Python as Debian packages it, python3-azure (`make
	// pyinterop-install`).
	Python = "python"
)

var tiers = []string{Azurite, JS, Python}

// tierNeeds says what each tier needs besides Go.
var tierNeeds = map[string]string{
	Azurite: "Node.js and Azurite",
	JS:      "Node.js, Azurite and the JS SDK",
	Python:  "Python 3 and python3-azure",
}

// Require runs the rest of the test only when Env asks for tier: when it
// is not asked for, the test is skipped, naming the switch; when it is,
// and what the tier needs is missing, the test fails with the command that
// installs it. Call it first:
//
//	tier.Require(t, tier.Azurite)
func Require(t testing.TB, tier string) {
	t.Helper()
	if !slices.Contains(tiers, tier) {
		t.Fatalf("tier: no tier %q (the tiers: %s)", tier, strings.Join(tiers, ", "))
	}
	on, err := On(tier)
	if err != nil {
		t.Fatalf("tier: %v", err)
	}
	if !on {
		t.Skipf("the %s tier (it needs %s): set %s=%s (or all) to run it; make test does", tier, tierNeeds[tier], Env, tier)
	}
	if err := Needs(tier); err != nil {
		t.Fatalf("tier: the %s tier was asked for (%s), but %v", tier, Env, err)
	}
}

// On reports whether Env asks for tier; an unknown name is an error, so
// that a typo does not quietly run nothing.
func On(tier string) (bool, error) {
	on := false
	for _, v := range strings.Split(os.Getenv(Env), ",") {
		switch v = strings.TrimSpace(v); {
		case v == "":
		case v == "all" || v == tier:
			on = true
		case !slices.Contains(tiers, v):
			return false, fmt.Errorf("%s=%q: no tier %q (want a comma-separated list of %s, or all)",
				Env, os.Getenv(Env), v, strings.Join(tiers, ", "))
		}
	}
	return on, nil
}

// Needs checks that what tier needs is installed, returning an error that
// names the command that installs what is missing.
func Needs(tier string) error {
	if tier == Python {
		_, err := FindPython()
		return err
	}
	if _, err := exec.LookPath("node"); err != nil {
		install := "make azurite-install"
		if tier == JS {
			install = "make azurite-install jsinterop-install"
		}
		return fmt.Errorf("Node.js is not on PATH (%v): install Node.js 20 or later, then run `%s`", err, install)
	}
	if _, err := azurite.Find(); err != nil {
		return err // it names the install command
	}
	return nil
}

// pythonCandidates are the interpreters FindPython tries, in order:
// Debian's own, for which python3-azure installs its modules (a python3 of
// pyenv or of a virtual environment earlier on PATH does not see them),
// then the one on PATH.
var pythonCandidates = []string{"/usr/bin/python3", "python3"}

// pythonFind exits 0 when the Azure SDK for Python's modules the python
// tier drives are installed. It finds them without importing them:
// importing takes 0.7 s of CPU.
const pythonFind = "import importlib.util as u, sys; " +
	"sys.exit(0 if all(u.find_spec(m) for m in ('azure.data.tables', 'azure.storage.queue', 'azure.storage.blob')) else 1)"

// python is FindPython's answer, found once per test binary.
var python struct {
	once sync.Once
	path string
	err  error
}

// PythonInstall is the command that installs what the python tier needs,
// from the repository's root (make test runs it).
const PythonInstall = "make pyinterop-install"

// FindPython returns the first of the Python 3 interpreters it tries
// (Debian's /usr/bin/python3, then python3 on PATH) that imports the Azure
// SDK for Python (azure-data-tables, azure-storage-queue,
// azure-storage-blob); the error says what each one lacked and how to
// install it.
func FindPython() (string, error) {
	python.once.Do(func() { python.path, python.err = lookPython() })
	return python.path, python.err
}

func lookPython() (string, error) {
	var tried []string
	for _, c := range pythonCandidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: not found", c))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, "-c", pythonFind)
		cmd.Stderr = &stderr
		err = cmd.Run()
		cancel()
		if err == nil {
			return path, nil
		}
		why := "no azure.data.tables, azure.storage.queue and azure.storage.blob"
		if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); lines[0] != "" {
			why = lines[len(lines)-1]
		}
		tried = append(tried, fmt.Sprintf("%s: %s", path, why))
	}
	return "", fmt.Errorf("no Python 3 that imports the Azure SDK for Python (%s): run `%s` from the repository root "+
		"(it runs `apt-get install -y python3-azure`; make test does)", strings.Join(tried, "; "), PythonInstall)
}
