package tier

import (
	"strings"
	"testing"
)

func TestTierOn(t *testing.T) {
	for _, c := range []struct {
		v           string
		azurite, js bool
	}{
		{"", false, false},
		{"all", true, true},
		{"azurite", true, false},
		{" js , azurite", true, true},
		{"js", false, true},
		{"python", false, false},
	} {
		t.Setenv(Env, c.v)
		az, err1 := On(Azurite)
		js, err2 := On(JS)
		if err1 != nil || err2 != nil || az != c.azurite || js != c.js {
			t.Errorf("%s=%q: azurite %v (%v), js %v (%v); want %v, %v", Env, c.v, az, err1, js, err2, c.azurite, c.js)
		}
	}
	t.Setenv(Env, "azurite,node")
	if _, err := On(Azurite); err == nil || !strings.Contains(err.Error(), `"node"`) {
		t.Errorf("%s=azurite,node: %v, want an error naming the unknown tier", Env, err)
	}
}

// Asked for without Node.js, a tier fails with the command that installs
// what it needs.
func TestTierNeedsNamesTheInstallCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for tier, want := range map[string]string{Azurite: "make azurite-install", JS: "make azurite-install jsinterop-install"} {
		err := Needs(tier)
		if err == nil || !strings.Contains(err.Error(), "Node.js") || !strings.Contains(err.Error(), want) {
			t.Errorf("Needs(%s) without node on PATH = %v, want an error naming Node.js and %q", tier, err, want)
		}
	}
}

// Asked for without a Python that imports the Azure SDK, the python tier
// fails with the command that installs it.
func TestPythonTierNeedsNamesTheInstallCommand(t *testing.T) {
	saved := pythonCandidates
	t.Cleanup(func() { pythonCandidates = saved })
	pythonCandidates = []string{"python3-not-installed", "/bin/false"}
	_, err := lookPython()
	if err == nil || !strings.Contains(err.Error(), PythonInstall) || !strings.Contains(err.Error(), "python3-not-installed") {
		t.Errorf("lookPython without a Python = %v, want an error naming what was tried and %q", err, PythonInstall)
	}
}
