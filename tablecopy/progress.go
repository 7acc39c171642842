package tablecopy

import "sync"

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
