package tablecopy

import (
	"runtime/debug"
	"sync"
)

// Progress is where a copy, backup, restore or verification is, handed to
// the Progress callback of its options, one call at a time.
type Progress struct {
	Table string // the table being read or written
	Phase string // "copy", "list keys", "backup", "restore", "delete", "verify"
	// Entities counts the entities written (copy, restore), stored
	// (backup) or read (verify) so far in this run, across tables.
	Entities int64
	// Skipped counts entities found already done by an interrupted run:
	// already in the backup, or identical in the target.
	Skipped int64
	// Total is how many entities the job handles in all, when known (a
	// restore or a verification of a backup); 0 when not.
	Total int64
	// Ranges and RangesDone count the key ranges of the scan running now
	// (their number grows as ranges split), or a restore's segments.
	Ranges, RangesDone int
}

// progressFunc serialises calls of a Progress callback.
type progressFunc struct {
	mu sync.Mutex
	fn func(Progress)
}

func (p *progressFunc) report(pr Progress) {
	if p == nil || p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(pr)
}

// Version is the build of tablekit that writes a manifest: the module's
// version, or its VCS revision in a development build.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := ""
	for _, d := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		if d.Path == "github.com/tablekit/tablekit" {
			v = d.Version
		}
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
	if v == "" || v == "(devel)" {
		v = "devel"
		if rev != "" {
			v += "+" + rev[:min(12, len(rev))]
			if dirty {
				v += "-dirty"
			}
		}
	}
	return v
}
