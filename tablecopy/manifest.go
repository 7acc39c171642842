package tablecopy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/tablekit/tablekit/internal/tkerr"
)

// Names of a backup's objects in its Location.
const (
	manifestName   = "manifest.json"
	checkpointName = "checkpoint.json"

	// ManifestFormat is the manifest's "format" field.
	ManifestFormat = "tablekit-backup"
	// ManifestVersion is the version of the format this build writes and
	// reads.
	ManifestVersion = 1
)

// Kinds of backup.
const (
	// KindFull holds every entity of its tables.
	KindFull = "full"
	// KindIncremental holds the entities changed since its base (a full
	// or incremental backup) and the keys deleted since.
	KindIncremental = "incremental"
	// KindChanges holds the entities changed since a time, without a
	// base: no deleted keys, and no full key list.
	KindChanges = "changes"
)

// Manifest describes a complete backup: it is written last, so a
// Location without one holds no finished backup.
type Manifest struct {
	Format   string `json:"format"`   // ManifestFormat
	Version  int    `json:"version"`  // ManifestVersion
	Tablekit string `json:"tablekit"` // the build that wrote it, as "tablekit version" prints it
	Kind     string `json:"kind"`     // KindFull, KindIncremental or KindChanges
	// Base is the Location of the backup an incremental one follows: a
	// directory relative to this backup's (when both are local), an
	// absolute one, or blob://CONTAINER/PREFIX in this backup's account.
	Base string `json:"base,omitempty"`
	// Source names the account backed up (its name and table endpoint).
	Source string `json:"source"`
	// Start and End bound the backup's window: every entity was read in
	// it (see docs/COPY.md for what that guarantees on a live table).
	Start  time.Time     `json:"start"`
	End    time.Time     `json:"end"`
	Tables []TableBackup `json:"tables"`
}

// TableBackup is one table of a backup.
type TableBackup struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"` // this table's scans started
	End   time.Time `json:"end"`
	// Since is set on incremental and changes backups: they hold the
	// entities whose Timestamp is later.
	Since *time.Time `json:"since,omitempty"`
	// Entities and Checksum are the Sum of every segment's entities.
	Entities int64     `json:"entities"`
	Checksum string    `json:"checksum"`
	Segments []Segment `json:"segments"`
	// Ranges cut the table's keys into the key ranges the backup read,
	// in key order, each with its own segments: every segment is in one
	// range, and holds only keys of it. VerifyBackup compares a table
	// with the backup range by range, as cut here. A backup written
	// before ranges existed has none (VerifyBackup then cuts its own).
	Ranges []KeyRange `json:"ranges,omitempty"`
	// Keys lists every key the table holds after this backup is restored
	// (after its base chain, for an incremental one), with each entity's
	// hash: what Verify compares a table with, and the next incremental
	// backup diffs its key listing against.
	Keys KeyFile `json:"keys"`
	// Deleted lists the keys deleted since the base (incremental only).
	Deleted *KeyFile `json:"deleted,omitempty"`
	// Skipped counts entities a resumed run found already in the backup.
	Skipped int64 `json:"skipped,omitempty"`
	// Runs counts the runs that wrote this table (1 unless resumed).
	Runs int `json:"runs"`
}

// Segment is one gzip file of JSON lines, one entity a line, in the
// format of "tablekit export" (with Timestamp, without odata.etag). It is
// a sequence of gzip members, one per page of the scan.
type Segment struct {
	File string `json:"file"` // relative to the Location
	// Bytes is the segment's length: readers read no further (an
	// interrupted run may have appended past it).
	Bytes    int64  `json:"bytes"`
	Entities int64  `json:"entities"`
	Checksum string `json:"checksum"` // Sum.Hash of its entities, hex
	// First and Last are its smallest and largest keys. Segments of one
	// table may overlap: each holds whole pages of the scan, from
	// whichever key ranges were read at once.
	First Key `json:"first"`
	Last  Key `json:"last"`
}

// KeyRange is one key range of a table's backup: the keys from From
// (inclusive; the zero Key is the table's first) up to To (exclusive;
// nil: to the table's end). The ranges of a table follow one another:
// each one's To is the next one's From.
type KeyRange struct {
	From Key  `json:"from"`
	To   *Key `json:"to,omitempty"`
	// Entities and Checksum are the Sum of its segments' entities.
	Entities int64  `json:"entities"`
	Checksum string `json:"checksum"`
	// Segments are the files (Segment.File) holding its entities.
	Segments []string `json:"segments"`
}

// contains reports whether k is in the range.
func (r *KeyRange) contains(k Key) bool {
	return r.From.Compare(k) <= 0 && (r.To == nil || k.Compare(*r.To) < 0)
}

// rangeOf returns the index of the range of rs (which follow one
// another) holding k.
func rangeOf(rs []KeyRange, k Key) int {
	i := sort.Search(len(rs), func(i int) bool { return k.Compare(rs[i].From) < 0 })
	return max(i-1, 0)
}

// KeyFile is a gzip file of JSON lines ["PK","RK","HASH"] in key order
// (HASH, the EntityHash in hex, is absent from deleted-key lists).
type KeyFile struct {
	File     string `json:"file"`
	Count    int64  `json:"count"`
	Checksum string `json:"checksum,omitempty"` // Sum.Hash of the listed hashes
}

// table returns the TableBackup of name.
func (m *Manifest) table(name string) *TableBackup {
	for i := range m.Tables {
		if m.Tables[i].Name == name {
			return &m.Tables[i]
		}
	}
	return nil
}

// ReadManifest reads the manifest of the backup at l. A Location without
// one fails with an error wrapping fs.ErrNotExist.
func ReadManifest(ctx context.Context, l *Location) (*Manifest, error) {
	b, err := l.get(ctx, manifestName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, tkerr.Errorf("tablekit: %s holds no finished backup (no %s): %w", l, manifestName, fs.ErrNotExist)
		}
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, tkerr.Errorf("tablekit: %s/%s: %w", l, manifestName, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("tablekit: %s/%s: format %q is not %q", l, manifestName, m.Format, ManifestFormat)
	}
	if m.Version < 1 || m.Version > ManifestVersion {
		return nil, fmt.Errorf("tablekit: %s/%s: version %d; this build reads versions 1 to %d", l, manifestName, m.Version, ManifestVersion)
	}
	for _, t := range m.Tables {
		for _, s := range t.Segments {
			if !safeName(s.File) {
				return nil, fmt.Errorf("tablekit: %s/%s: table %s: segment file %q is outside the backup", l, manifestName, t.Name, s.File)
			}
		}
		for i, r := range t.Ranges {
			if i > 0 && (t.Ranges[i-1].To == nil || t.Ranges[i-1].To.Compare(r.From) != 0) {
				return nil, fmt.Errorf("tablekit: %s/%s: table %s: range %d does not start where range %d ends", l, manifestName, t.Name, i, i-1)
			}
			if i == len(t.Ranges)-1 && r.To != nil {
				return nil, fmt.Errorf("tablekit: %s/%s: table %s: the last range ends at %v, not at the table's end", l, manifestName, t.Name, *r.To)
			}
		}
		if !safeName(t.Keys.File) || t.Deleted != nil && !safeName(t.Deleted.File) {
			return nil, fmt.Errorf("tablekit: %s/%s: table %s: a key file is outside the backup", l, manifestName, t.Name)
		}
	}
	return &m, nil
}

// safeName reports whether an object name from a manifest stays inside
// its Location.
func safeName(n string) bool {
	if n == "" || n[0] == '/' || n[0] == '\\' {
		return false
	}
	for _, part := range splitPath(n) {
		if part == ".." || part == "" {
			return false
		}
	}
	return true
}

func splitPath(n string) []string {
	var parts []string
	start := 0
	for i := 0; i <= len(n); i++ {
		if i == len(n) || n[i] == '/' || n[i] == '\\' {
			parts = append(parts, n[start:i])
			start = i + 1
		}
	}
	return parts
}

// chain reads the manifests of the backup at l and of its bases, oldest
// first.
func chain(ctx context.Context, l *Location) ([]*Manifest, []*Location, error) {
	var ms []*Manifest
	var ls []*Location
	seen := map[string]bool{}
	for {
		m, err := ReadManifest(ctx, l)
		if err != nil {
			return nil, nil, err
		}
		ms = append([]*Manifest{m}, ms...)
		ls = append([]*Location{l}, ls...)
		if m.Kind != KindIncremental {
			return ms, ls, nil
		}
		if seen[m.Base] || len(ms) > 1000 {
			return nil, nil, fmt.Errorf("tablekit: %s: its chain of base backups loops at %s", l, m.Base)
		}
		seen[m.Base] = true
		base, err := l.resolve(m.Base)
		if err != nil {
			return nil, nil, tkerr.Errorf("tablekit: base of %s: %w", l, err)
		}
		l = base
	}
}
