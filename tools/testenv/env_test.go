package testenv

import (
	"strings"
	"testing"
)

func TestReadTarget(t *testing.T) {
	for _, c := range []struct {
		v, kind  string
		lenient  bool
		earlyEnd bool
	}{
		{"", TargetEmulator, false, false},
		{"emulator", TargetEmulator, false, false},
		{"emulator-early-end", TargetEmulator, false, true},
		{"azurite", TargetAzurite, false, false},
		{"azurite-lenient", TargetAzurite, true, false},
		{"UseDevelopmentStorage=true", targetAccount, false, false},
		{"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=a2V5", targetAccount, false, false},
	} {
		t.Setenv(EnvTarget, c.v)
		tg, err := readTarget()
		if err != nil || tg.kind != c.kind || tg.lenient != c.lenient || (tg.earlyEnd > 0) != c.earlyEnd {
			t.Errorf("%s=%q: %+v, %v; want %s (lenient %v, early ends %v)", EnvTarget, c.v, tg, err, c.kind, c.lenient, c.earlyEnd)
		}
	}
	t.Setenv(EnvTarget, "azurit")
	if _, err := readTarget(); err == nil || !strings.Contains(err.Error(), "azurite-lenient") {
		t.Errorf("%s=azurit: %v, want an error listing the targets", EnvTarget, err)
	}
}

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
		t.Setenv(EnvTiers, c.v)
		az, err1 := tierOn(TierAzurite)
		js, err2 := tierOn(TierJS)
		if err1 != nil || err2 != nil || az != c.azurite || js != c.js {
			t.Errorf("%s=%q: azurite %v (%v), js %v (%v); want %v, %v", EnvTiers, c.v, az, err1, js, err2, c.azurite, c.js)
		}
	}
	t.Setenv(EnvTiers, "azurite,node")
	if _, err := tierOn(TierAzurite); err == nil || !strings.Contains(err.Error(), `"node"`) {
		t.Errorf("%s=azurite,node: %v, want an error naming the unknown tier", EnvTiers, err)
	}
}

// Asked for without Node.js, a tier fails with the command that installs
// what it needs.
func TestTierNeedsNamesTheInstallCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for tier, want := range map[string]string{TierAzurite: "make azurite-install", TierJS: "make azurite-install jsinterop-install"} {
		err := needs(tier)
		if err == nil || !strings.Contains(err.Error(), "Node.js") || !strings.Contains(err.Error(), want) {
			t.Errorf("needs(%s) without node on PATH = %v, want an error naming Node.js and %q", tier, err, want)
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

func TestReadSeed(t *testing.T) {
	t.Setenv(EnvSeed, "")
	if _, set, err := readSeed(); set || err != nil {
		t.Errorf("unset: set %v, %v", set, err)
	}
	t.Setenv(EnvSeed, "42")
	if s, set, err := readSeed(); s != 42 || !set || err != nil {
		t.Errorf("42: %d, %v, %v", s, set, err)
	}
	t.Setenv(EnvSeed, "random")
	a, _, _ := readSeed()
	if b, set, err := readSeed(); a != b || !set || err != nil {
		t.Errorf("random: %d then %d (%v, %v), want one seed per test binary", a, b, set, err)
	}
	t.Setenv(EnvSeed, "-1")
	if _, _, err := readSeed(); err == nil {
		t.Error("-1: no error")
	}
}
