package benchutil

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := parse(" rounds=6, export-entities=50000 ,")
	if err != nil || got[KeyRounds] != "6" || got[KeyExportEntities] != "50000" || len(got) != 2 {
		t.Errorf("parse: %v, %v", got, err)
	}
	for _, bad := range []string{"rounds", "rounds=", "round=6"} {
		if _, err := parse(bad); err == nil || !strings.Contains(err.Error(), Env) {
			t.Errorf("parse(%q) = %v, want an error naming %s", bad, err, Env)
		}
	}
}

func TestIntAndRounds(t *testing.T) {
	t.Setenv(Env, "rounds=6,long-rounds=2,model-scale=0.5,export-sweep=1")
	if n := Rounds(t); n != 6 {
		t.Errorf("Rounds = %d, want 6", n)
	}
	if n := LongRounds(t); n != 2 {
		t.Errorf("LongRounds = %d, want 2", n)
	}
	if n := Int(t, KeyCopyEntities, 20_000); n != 20_000 {
		t.Errorf("unset copy-entities = %d, want the default", n)
	}
	if f := Float(t, KeyModelScale, 1); f != 0.5 {
		t.Errorf("model-scale = %v, want 0.5", f)
	}
	if !Bool(t, KeyExportSweep) {
		t.Error("export-sweep=1 is false")
	}
}
