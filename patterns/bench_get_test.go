package patterns_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit/tools/benchutil"
)

// BenchmarkGetInterleaved measures what BenchmarkGet measures with the
// sides taking turns request by request (b.N turns), not in rounds of a
// second each: the shared machine's drift falls on every side alike, and
// the median of single requests is what the client adds to each.
//
// Sides: tablekit's Get; "azcore", the ceiling's pre-signed request sent
// through a bare azcore pipeline (runtime.NewPipeline with no options: the
// retry, telemetry, logging and tracing policies and the body download,
// over the ceiling's own http.Client), the least any client built on
// azcore pays; and the ceiling. It reports each side's median and mean
// request time and client CPU (getrusage around each request), and
// tablekit's and azcore's median throughput as a percentage of the
// ceiling's.
func BenchmarkGetInterleaved(b *testing.B) {
	ctx := context.Background()
	tbl, _ := benchTable(b)
	row := benchRow("Sales", 1)
	if err := tbl.Insert(ctx, &row, nil); err != nil {
		b.Fatal(err)
	}
	ceil := newCeiling(b)
	getPath := "/" + tbl.Name() + "(PartitionKey='Sales',RowKey='" + row.RowKey + "')"
	getURL := ceil.endpoint + getPath
	header := ceil.signed(getPath)
	azPipeline := runtime.NewPipeline("tablekit", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{Transport: ceil.client})
	sides := []struct {
		name string
		op   func() error
	}{
		{"tablekit", func() error { _, err := tbl.Get(ctx, "Sales", row.RowKey, nil); return err }},
		{"azcore", func() error {
			req, err := runtime.NewRequest(ctx, http.MethodGet, getURL)
			if err != nil {
				return err
			}
			for k, v := range header {
				req.Raw().Header[k] = v
			}
			resp, err := azPipeline.Do(req)
			if err != nil {
				return err
			}
			if !runtime.HasStatusCode(resp, http.StatusOK) {
				return runtime.NewResponseError(resp)
			}
			_, err = runtime.Payload(resp)
			return err
		}},
		{"ceiling", func() error {
			return ceil.send(ctx, http.MethodGet, getURL, header, nil, http.StatusOK, func(*http.Response, []byte) error { return nil })
		}},
	}
	ops := make([]func() error, len(sides))
	for i, s := range sides {
		ops[i] = s.op
	}
	warmUp(b, warmTime, ops...)
	times := make([][]time.Duration, len(sides))
	cpu := make([]time.Duration, len(sides))
	n := 0
	for b.Loop() {
		for j := range sides {
			k := (n + j) % len(sides) // each side first in turn
			c0, t0 := benchutil.ProcessCPU(), time.Now()
			if err := sides[k].op(); err != nil {
				b.Fatal(err)
			}
			times[k] = append(times[k], time.Since(t0))
			cpu[k] += benchutil.ProcessCPU() - c0
		}
		n++
	}
	p50 := make([]float64, len(sides))
	for k, s := range sides {
		var sum time.Duration
		for _, d := range times[k] {
			sum += d
		}
		slices.Sort(times[k])
		p50[k] = float64(times[k][len(times[k])/2].Nanoseconds()) / 1e3
		b.ReportMetric(p50[k], s.name+"-p50-µs")
		b.ReportMetric(float64(sum.Nanoseconds())/1e3/float64(n), s.name+"-mean-µs")
		b.ReportMetric(float64(cpu[k].Nanoseconds())/1e3/float64(n), s.name+"-cpu-µs")
	}
	ceilingP50 := p50[len(sides)-1]
	b.ReportMetric(100*ceilingP50/p50[0], "tablekit-%-of-ceiling")
	b.ReportMetric(100*ceilingP50/p50[1], "azcore-%-of-ceiling")
}
