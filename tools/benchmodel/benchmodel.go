// Package benchmodel starts tablekit's emulator on its scale model for
// the whole-table benchmarks (docs/BENCHMARKS.md "Whole tables on the
// scale model"), and works out from the model's parameters the fastest a
// job may go: the bound a benchmark reports its throughput against.
package benchmodel

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/emulator/load"
	"github.com/tablekit/tablekit/tools/benchutil"
)

// DefaultScale is the model's scale in the benchmarks: Azure's published
// targets unscaled (2,000 entities a second a partition, 20,000 an
// account, 500 µs an entity on a server). This machine serves more than
// that (the emulator loads about 37,000 entities a second through
// BulkWrite, docs/BENCHMARKS.md), and in the skewed layout the hot
// partition, not the account, bounds every whole-table job.
const DefaultScale = 1.0

// Scale is the model's Scale (ModelOptions.Scale) in the benchmarks:
// DefaultScale, or model-scale in TABLEKIT_BENCH.
func Scale(tb testing.TB) float64 {
	tb.Helper()
	return benchutil.Float(tb, benchutil.KeyModelScale, DefaultScale)
}

// Model is an emulator on the scale model, and the model's parameters.
type Model struct {
	*emulator.Instance
	Options emulator.ScaleOptions
	// Latency is what every request through TableURL waits first.
	Latency time.Duration

	place *load.Model // the model's placement, for Bound
}

// Start starts an emulator on the scale model at Scale with Azure's
// defaults otherwise, latency added to every request through TableURL,
// for tb's lifetime. Its DirectTableURL loads data without the model.
func Start(tb testing.TB, latency time.Duration) *Model {
	tb.Helper()
	return StartAt(tb, latency, Scale(tb))
}

// StartAt is Start at scale, for a benchmark whose work this machine
// cannot serve at Scale (writes spread over many partitions at the
// account's target).
func StartAt(tb testing.TB, latency time.Duration, scale float64) *Model {
	tb.Helper()
	o := emulator.ScaleOptions{Scale: scale}
	inst := emulator.StartTB(tb, &emulator.Options{Scale: &o, Latency: latency})
	return &Model{Instance: inst, Options: o, Latency: latency, place: load.NewModel(o)}
}

// Account is an account on m through TableURL (the model), with opts.
func (m *Model) Account(tb testing.TB, opts *tablekit.AccountOptions) *tablekit.Account {
	tb.Helper()
	acct, err := tablekit.Connect(m.ConnectionString, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return acct
}

// Direct is an account on m's DirectTableURL: no latency, no model.
func (m *Model) Direct(tb testing.TB) *tablekit.Account {
	tb.Helper()
	acct, err := tablekit.NewAccountWithSharedKey(m.AccountName, m.AccountKey, tablekit.Endpoints{Table: m.DirectTableURL}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return acct
}

// Job is the work of a whole-table job for Bound: entities per
// PartitionKey of the tables it reads (scanned once) and writes.
type Job struct {
	Read, Write map[string]map[string]int // table -> PartitionKey -> entities
}

// Bound is the least time the model allows a job, and what sets it.
type Bound struct {
	Time time.Duration
	// By says which bound binds: "account target", "partition target
	// (table/pk)" or "server N" (its service time).
	By string
	// Entities is the job's entities (those read, or written when it
	// reads none; a copy counts what it writes): Rate's numerator.
	Entities int
}

// Rate is the job's entities a second at the bound.
func (b Bound) Rate() float64 { return float64(b.Entities) / b.Time.Seconds() }

// Bound is the fastest the model lets job run, whatever the client does:
// the largest of
//   - the account's target over every entity read and written;
//   - each partition's target over what is read from it and written to
//     it (a read naming no partition is charged to the account only, but
//     it still queues on the partition's server, below);
//   - each server's service time (EntityTime per entity read; writes take
//     none in the model), over its Parallel slots.
//
// It assumes ModelOptions.PageTime is zero (the default) and ignores the
// buckets' bursts (100 ms of each target).
func (m *Model) Bound(job Job) Bound {
	tgt := m.Options.Throttle
	scale := m.Options.Scale
	if scale <= 0 {
		scale = 1
	}
	acct := rate(tgt.AccountEntitiesPerSecond, load.AzureAccountEntitiesPerSecond, scale)
	part := rate(tgt.PartitionEntitiesPerSecond, load.AzurePartitionEntitiesPerSecond, scale)
	et := m.Options.EntityTime
	switch {
	case et == 0:
		et = load.DefaultEntityTime
	case et < 0:
		et = 0
	}
	et = time.Duration(float64(et) / scale)
	slots := float64(max(m.Options.Parallel, 1))

	var b Bound
	worse := func(d time.Duration, by string) {
		if d > b.Time {
			b.Time, b.By = d, by
		}
	}
	total, read, written := 0, 0, 0
	perPart := map[string]int{}
	server := make([]int, m.place.Servers())
	for table, parts := range job.Read {
		for pk, n := range parts {
			read += n
			perPart[table+"/"+pk] += n
			server[m.place.Server(table, pk)] += n
		}
	}
	for table, parts := range job.Write {
		for pk, n := range parts {
			written += n
			perPart[table+"/"+pk] += n
		}
	}
	total = read + written
	if acct > 0 {
		worse(seconds(float64(total)/acct), "account target")
	}
	if part > 0 {
		for p, n := range perPart {
			worse(seconds(float64(n)/part), fmt.Sprintf("partition target (%s)", p))
		}
	}
	for i, n := range server {
		worse(time.Duration(float64(et)*float64(n)/slots), fmt.Sprintf("server %d", i))
	}
	b.Entities = written
	if read > 0 && written == 0 {
		b.Entities = read
	}
	return b
}

func rate(target, def int, scale float64) float64 {
	switch {
	case target < 0:
		return 0
	case target == 0:
		target = def
	}
	return float64(target) * scale
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
