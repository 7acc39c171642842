// Package buildinfo says which build of tablekit is running, in one string
// that the commands print (tablekit version, tablekit-worker --version),
// backup manifests record and the worker's metrics expose. It reads the
// build information the Go toolchain writes into every binary
// (runtime/debug.ReadBuildInfo) and imports nothing but the standard
// library, so that every package of the module may use it.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// ModulePath is tablekit's module path: the module whose version Version
// reports, whether it is the binary's main module (tablekit's own
// commands) or a dependency (a program that imports the library).
const ModulePath = "github.com/tablekit/tablekit"

// Version returns the version of tablekit built into this binary:
//
//   - "v0.1.0" when built from a released module (go install ...@v0.1.0,
//     or a program that requires tablekit v0.1.0);
//   - a pseudo-version such as "v0.0.0-20261128014126-d8f371c702ed" when go
//     build stamped one from the checkout's commit, "+dirty" at its end when
//     the checkout had uncommitted changes;
//   - "(devel)" when built from a checkout without version control
//     information (go build -buildvcs=false, go run, go test, or a git
//     worktree, which the go command does not stamp), followed by the
//     commit's first 12 hex digits, and "+dirty", when the build
//     information has them but the version does not;
//   - "unknown" when the binary holds no build information.
//
// A VCS revision is reported only when tablekit is the main module: in a
// program that imports the library, the revision recorded is the
// program's, not tablekit's.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return Format(bi)
}

// Format is Version for the build information bi: what a binary built
// with bi reports (debug/buildinfo.ReadFile reads a binary's).
func Format(bi *debug.BuildInfo) string {
	mod, isMain := &bi.Main, bi.Main.Path == ModulePath
	if !isMain {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == ModulePath {
				mod = d
				if d.Replace != nil {
					mod = d.Replace
				}
				break
			}
		}
		if mod == nil {
			return "unknown"
		}
	}
	v := mod.Version
	if v == "" {
		v = "(devel)"
	}
	if !isMain {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	short := rev[:min(12, len(rev))]
	if !strings.Contains(v, short) {
		v += " " + short
	}
	if dirty && !strings.HasSuffix(v, "+dirty") {
		v += "+dirty"
	}
	return v
}
