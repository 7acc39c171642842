package benchmodel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/tools/benchmodel"
	"github.com/tablekit/tablekit/tools/benchutil"
)

// Bound names the target or server that binds, at Azure's targets
// (scale 1): 400 partitions of 100 written are the account's (40,000 at
// 20,000/s), one partition of 1,000 written its own (2,000/s), and 4,000
// read from one partition its server's (500 µs an entity) or its target,
// which give the same time.
func TestBound(t *testing.T) {
	t.Setenv(benchutil.Env, benchutil.KeyModelScale+"=1")
	m := benchmodel.Start(t, 0)
	spread := map[string]int{}
	for i := range 400 {
		spread[fmt.Sprintf("p%03d", i)] = 100
	}
	for _, c := range []struct {
		name string
		job  benchmodel.Job
		want time.Duration
		by   string
		n    int
	}{
		{"account", benchmodel.Job{Write: map[string]map[string]int{"t": spread}}, 2 * time.Second, "account target", 40000},
		{"partition", benchmodel.Job{Write: map[string]map[string]int{"t": {"hot": 1000, "cold": 10}}}, 500 * time.Millisecond, "partition target (t/hot)", 1010},
		{"read", benchmodel.Job{Read: map[string]map[string]int{"t": {"hot": 4000}}}, 2 * time.Second, "", 4000},
	} {
		b := m.Bound(c.job)
		if b.Time != c.want || !strings.Contains(b.By, c.by) || b.Entities != c.n {
			t.Errorf("%s: Bound = %+v, want %v by %q over %d entities", c.name, b, c.want, c.by, c.n)
		}
	}
	t.Setenv(benchutil.Env, benchutil.KeyModelScale+"=0.5")
	if b := benchmodel.Start(t, 0).Bound(benchmodel.Job{Write: map[string]map[string]int{"t": {"hot": 1000}}}); b.Time != time.Second {
		t.Errorf("at scale 0.5 a partition's 1,000 entities: %v, want 1s", b.Time)
	}
}
