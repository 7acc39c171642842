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
