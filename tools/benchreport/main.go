// Command benchreport reads `go test -bench` output (several -count runs)
// and prints, for every benchmark with a tablekit side and a reference
// side measured in the same run, the medians and the ratio. A benchmark
// marks its sides with a sub-benchmark segment impl=VALUE (or codec=VALUE):
// VALUE "tablekit" is ours, anything else ("raw", "aztables", ...) a
// reference, e.g. BenchmarkScan10k/impl=tablekit and
// BenchmarkScan10k/impl=raw. Other benchmarks (BenchmarkTransactions/
// concurrency=4) are listed in a table of their own.
//
// Sides measured in rounds (TABLEKIT_BENCH=rounds=N: go test names the
// repeats impl=tablekit#01, ...) are paired round by round: a ratio is the
// median of the per-round ratios, each taken from sides measured minutes
// apart at most. A side named "ceiling" (pre-encoded requests, nothing
// decoded) gets a table of its own: tablekit's throughput as a percentage
// of the ceiling's, and client CPU per entity (the cpu-µs/... metric) as a
// ratio to the ceiling's. A benchmark whose sides are all tablekit's
// (impl=memory beside impl=disk) lists each side alone and, when it has a
// ceiling side, each against the ceiling in that table
// (emulator.LocationPoint/op=read impl=memory).
//
// Every side that reports limit-% and throttled-% (a job through a
// throttle) is listed once more in a table of its own, with the range
// over the rounds and whether it met the bulk writer's goals.
//
// A side named "raw" (the hand-written code over the Azure SDK) gets a
// table of its own too: tablekit's rate as a ratio to raw's (the /s metric
// both report, tx/s or entities/s, else raw's time over tablekit's) and its
// client CPU per op (the cpu-µs/... metric both report) as a ratio to
// raw's, each the median of the per-round ratios. Where no side is called
// "tablekit", every side but raw and the ceiling is tablekit's
// (consistency.WorkerVsLoop impl=worker).
//
// Usage: TABLEKIT_BENCH=rounds=6 go test -run '^$' -bench . -count 1 ./... | go run ./tools/benchreport
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

var (
	lineRE  = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)
	sideRE  = regexp.MustCompile(`^(impl|codec)=(.+)$`)
	pkgRE   = regexp.MustCompile(`^pkg:\s+(\S+)`)
	valueRE = regexp.MustCompile(`([-+0-9.eE]+)\s+(\S+)`)
	roundRE = regexp.MustCompile(`#\d+$`)
)

type sample map[string][]float64 // unit -> values

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	samples := map[string]sample{}
	var order []string
	pkg := ""
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := pkgRE.FindStringSubmatch(line); m != nil {
			pkg = strings.TrimPrefix(m[1], "github.com/tablekit/tablekit")
			pkg = strings.TrimPrefix(pkg, "/")
			if pkg == "" {
				pkg = "tablekit"
			}
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(m[1], "Benchmark"), "/")
		for i, p := range parts {
			parts[i] = roundRE.ReplaceAllString(p, "")
		}
		name := pkg + "." + strings.Join(parts, "/")
		s := samples[name]
		if s == nil {
			s = sample{}
			samples[name] = s
			order = append(order, name)
		}
		for _, v := range valueRE.FindAllStringSubmatch(m[3], -1) {
			f, err := strconv.ParseFloat(v[1], 64)
			if err != nil {
				continue
			}
			s[v[2]] = append(s[v[2]], f)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}

	// Group the sides of each benchmark.
	type pair struct {
		base string
		ours string
		refs []string
	}
	groups := map[string]*pair{}
	var bases []string
	for _, name := range order {
		parts := strings.Split(name, "/")
		idx := -1
		for i, p := range parts {
			if sideRE.MatchString(p) {
				idx = i
			}
		}
		if idx < 0 {
			continue
		}
		side := sideRE.FindStringSubmatch(parts[idx])[2]
		base := strings.Join(slices.Delete(slices.Clone(parts), idx, idx+1), "/")
		g := groups[base]
		if g == nil {
			g = &pair{base: base}
			groups[base] = g
			bases = append(bases, base)
		}
		if side == "tablekit" {
			g.ours = name
		} else {
			g.refs = append(g.refs, name)
		}
	}
	sort.Strings(bases)
	var single []string
	for _, name := range order {
		if !hasSide(name) {
			single = append(single, name)
		} else if g := groups[sideBase(name)]; g != nil && (g.ours == "" || g.ours == name && len(g.refs) == 0) {
			single = append(single, name)
		}
	}
	sort.Strings(single)

	fmt.Fprintln(out, "| benchmark | reference | tablekit | reference | speed-up (reference time / tablekit time) | tablekit allocs/op | reference allocs/op | runs |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|")
	var ceilings, raws [][2]string
	for _, b := range bases {
		g := groups[b]
		raws = append(raws, againstRaw(g.ours, g.refs)...)
		if g.ours == "" {
			// Sides that are all tablekit's (impl=memory beside impl=disk)
			// are listed alone, and each against the ceiling if there is one.
			for _, c := range g.refs {
				if lastSide(c) != "impl=ceiling" && lastSide(c) != "codec=ceiling" {
					continue
				}
				for _, r := range g.refs {
					if r != c {
						ceilings = append(ceilings, [2]string{r, c})
					}
				}
			}
			continue
		}
		ours := samples[g.ours]
		for _, r := range g.refs {
			ref := samples[r]
			side := sideRE.FindStringSubmatch(lastSide(r))[2]
			if side == "ceiling" {
				ceilings = append(ceilings, [2]string{g.ours, r})
			}
			fmt.Fprintf(out, "| %s | %s | %s | %s | %.2fx | %s | %s | %d |\n",
				b, side, describe(ours), describe(ref), pairedRatio(ref["ns/op"], ours["ns/op"]),
				fmtNum(median(ours["allocs/op"])), fmtNum(median(ref["allocs/op"])), len(ours["ns/op"]))
		}
	}
	if len(ceilings) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "| benchmark | tablekit | ceiling | tablekit throughput, % of the ceiling's | client CPU, tablekit | ceiling | CPU ratio | runs |")
		fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|")
		for _, c := range ceilings {
			ours, ref := samples[c[0]], samples[c[1]]
			cpuOurs, cpuRef, cpuRatio := cpuColumns(ours, ref)
			fmt.Fprintf(out, "| %s | %s | %s | %.0f%% | %s | %s | %s | %d |\n",
				pairName(c[0]), fmtDur(median(ours["ns/op"])), fmtDur(median(ref["ns/op"])),
				100*pairedRatio(ref["ns/op"], ours["ns/op"]), cpuOurs, cpuRef, cpuRatio, len(ours["ns/op"]))
		}
	}
	if len(raws) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "| benchmark | tablekit | raw | rate, tablekit / raw | client CPU, tablekit | raw | CPU, tablekit / raw | runs |")
		fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|")
		for _, c := range raws {
			ours, ref := samples[c[0]], samples[c[1]]
			rateOurs, rateRef := fmtDur(median(ours["ns/op"])), fmtDur(median(ref["ns/op"]))
			rate := pairedRatio(ref["ns/op"], ours["ns/op"])
			if u := commonUnit(ours, ref, func(u string) bool { return strings.HasSuffix(u, "/s") }); u != "" {
				rateOurs, rateRef = fmtNum(median(ours[u]))+" "+u, fmtNum(median(ref[u]))+" "+u
				rate = pairedRatio(ours[u], ref[u])
			}
			cpuOurs, cpuRef, cpuRatio := cpuColumns(ours, ref)
			fmt.Fprintf(out, "| %s | %s | %s | %.2fx | %s | %s | %s | %d |\n",
				pairName(c[0]), rateOurs, rateRef, rate, cpuOurs, cpuRef, cpuRatio, len(ours["ns/op"]))
		}
	}
	if len(single) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "| benchmark (no reference side) | median | runs |")
		fmt.Fprintln(out, "|---|---|---|")
		for _, name := range single {
			fmt.Fprintf(out, "| %s | %s | %d |\n", name, describeAll(samples[name]), len(samples[name]["ns/op"]))
		}
	}
	throttledJobs(out, order, samples)
	return nil
}

// throttledJobs prints, for every side that reports both limit-% and
// throttled-% (a job through a throttle: the share of the fastest the
// throttle allows it reached, and of its requests refused), the median
// of each with the range over the rounds, and whether it met the bulk
// writer's goals (issue 53: at least 90% of the limit, at most 5%
// throttled), in the order the benchmarks ran.
func throttledJobs(out io.Writer, order []string, samples map[string]sample) {
	var rows []string
	for _, name := range order {
		s := samples[name]
		l, th := s["limit-%"], s["throttled-%"]
		if len(l) == 0 || len(th) == 0 {
			continue
		}
		goal := "no"
		if median(l) >= 90 && median(th) <= 5 {
			goal = "yes"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s (%s to %s) | %s (%s to %s) | %s | %d |",
			name, fmtNum(median(l)), fmtNum(slices.Min(l)), fmtNum(slices.Max(l)),
			fmtNum(median(th)), fmtNum(slices.Min(th)), fmtNum(slices.Max(th)), goal, len(l)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| throttled job | limit-%, median (rounds) | throttled-%, median (rounds) | at least 90%, at most 5% | runs |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintln(out, r)
	}
}

// againstRaw pairs each of a benchmark's tablekit sides with its raw side,
// if it has one: ours, or, when no side is tablekit's by name, every side
// but raw and the ceiling.
func againstRaw(ours string, refs []string) [][2]string {
	raw := ""
	for _, r := range refs {
		if side := sideRE.FindStringSubmatch(lastSide(r))[2]; side == "raw" {
			raw = r
		}
	}
	if raw == "" {
		return nil
	}
	if ours != "" {
		return [][2]string{{ours, raw}}
	}
	var pairs [][2]string
	for _, r := range refs {
		if side := sideRE.FindStringSubmatch(lastSide(r))[2]; side != "raw" && side != "ceiling" {
			pairs = append(pairs, [2]string{r, raw})
		}
	}
	return pairs
}

// pairName names a side in a table of pairs: the benchmark, and the side
// unless it is called tablekit.
func pairName(name string) string {
	base := sideBase(name)
	if side := lastSide(name); side != "impl=tablekit" && side != "codec=tablekit" {
		base += " " + side
	}
	return base
}

// commonUnit is the first unit, in sorted order, that both sides report
// and keep accepts; "" if none.
func commonUnit(ours, ref sample, keep func(unit string) bool) string {
	var units []string
	for u := range ours {
		if keep(u) && len(ref[u]) > 0 {
			units = append(units, u)
		}
	}
	if len(units) == 0 {
		return ""
	}
	return slices.Min(units)
}

// cpuColumns prints both sides' median client CPU per op and the median
// of the per-round ratios of ours to ref's, or three empty cells when the
// two do not both report it.
func cpuColumns(ours, ref sample) (o, r, ratio string) {
	u := commonUnit(ours, ref, func(u string) bool { return strings.HasPrefix(u, "cpu-") })
	if u == "" {
		return "", "", ""
	}
	return fmtNum(median(ours[u])) + " " + u, fmtNum(median(ref[u])) + " " + u,
		fmt.Sprintf("%.2fx", pairedRatio(ours[u], ref[u]))
}

// sideBase is a benchmark's name without its side segment.
func sideBase(name string) string {
	parts := strings.Split(name, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if sideRE.MatchString(parts[i]) {
			return strings.Join(slices.Delete(slices.Clone(parts), i, i+1), "/")
		}
	}
	return name
}

// pairedRatio is num/den: the median of the per-round ratios when both
// sides have one sample per round, else the ratio of the medians.
func pairedRatio(num, den []float64) float64 {
	if len(num) == len(den) && len(num) > 0 {
		r := make([]float64, len(num))
		for i := range num {
			r[i] = num[i] / den[i]
		}
		return median(r)
	}
	return median(num) / median(den)
}

// describeAll prints the median of every metric but the allocation ones.
func describeAll(s sample) string {
	out := fmtDur(median(s["ns/op"]))
	var units []string
	for u := range s {
		if u != "ns/op" && u != "B/op" && u != "allocs/op" {
			units = append(units, u)
		}
	}
	sort.Strings(units)
	for _, u := range units {
		out += ", " + fmtNum(median(s[u])) + " " + u
	}
	return out
}

func hasSide(name string) bool { return lastSide(name) != "" }

func lastSide(name string) string {
	parts := strings.Split(name, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if sideRE.MatchString(parts[i]) {
			return parts[i]
		}
	}
	return ""
}

// describe prints the median time per op, and the median of any custom
// throughput metric (entities/s, tx/s), latency, client CPU, size or
// share (limit-%, throttled-%).
func describe(s sample) string {
	out := fmtDur(median(s["ns/op"]))
	var units []string
	for u := range s {
		if strings.HasSuffix(u, "/s") || strings.HasPrefix(u, "cpu-") || strings.HasPrefix(u, "p50") || strings.HasPrefix(u, "p99") || u == "requests/op" || strings.HasSuffix(u, "-MB") || strings.HasSuffix(u, "-%") {
			units = append(units, u)
		}
	}
	sort.Strings(units)
	for _, u := range units {
		out += ", " + fmtNum(median(s[u])) + " " + u
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func fmtDur(ns float64) string {
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(ns/1e9, 'f', 2, 64) + " s"
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'f', 2, 64) + " ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(ns, 'f', 0, 64) + " ns"
}

func fmtNum(f float64) string {
	if f >= 100 || f == float64(int64(f)) {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}
