package tablecopy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// segmentLines returns the entity lines of a segment file (every gzip
// member, in order).
func segmentLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, l := range bytes.Split(text, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}

// gzipLines is lines as one valid gzip member, as small as gzip makes
// it (so it fits in the manifest's byte count of the segment it
// replaces, which held one member per page).
func gzipLines(t *testing.T, lines [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		zw.Write(l)
		zw.Write([]byte("\n"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func entityLine(t *testing.T, e entity.Entity) []byte {
	t.Helper()
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// copyDir copies the backup directory from into a new directory.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	return to
}

// damagedCase is a backup whose first segment is damaged.
type damagedCase struct {
	name string
	loc  *tablecopy.Location
	seg  tablecopy.Segment // as the manifest says
	// decodes is set for valid gzip of valid entities, got their count:
	// the manifest's byte count of the segment is then the file's, as a
	// rewrite of both would make it, so that only the segment's count
	// and checksum can tell.
	decodes bool
	got     int64
}

// damagedBackups backs up a table of 300 entities and returns copies of
// the backup with every kind of damage to its first segment: content
// that is not gzip, or stops short, or a line not an entity, and valid
// gzip of valid entities that are not the manifest's (one missing, one
// extra, one twice, one changed).
func damagedBackups(t *testing.T, acct *tablekit.Account) []damagedCase {
	t.Helper()
	ctx := context.Background()
	src := newRows(t, acct, true)
	fill(t, src, 300, 3)
	dir := t.TempDir()
	res, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, tablecopy.Dir(dir), &tablecopy.BackupOptions{Parallel: 1, SegmentBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	seg := res.Manifest.Tables[0].Segments[0]
	if seg.Entities < 3 {
		t.Fatalf("the first segment holds %d entities; the cases need 3", seg.Entities)
	}
	lines := segmentLines(t, filepath.Join(dir, filepath.FromSlash(seg.File)))
	changed := slices.Clone(lines)
	e, err := entity.ParseEntity(changed[1])
	if err != nil {
		t.Fatal(err)
	}
	e.Properties["Int32"] = entity.Int32(-7)
	changed[1] = entityLine(t, e)
	n := seg.Entities
	whole := gzipLines(t, lines)
	var cases []damagedCase
	for _, c := range []struct {
		name    string
		file    []byte
		decodes bool
		got     int64
	}{
		{"not gzip", []byte("not gzip"), false, 0},
		{"cut short", whole[:len(whole)/2], false, 0},
		{"a line not an entity", gzipLines(t, append(slices.Clone(lines), []byte(`{"PartitionKey":`))), false, 0},
		{"one entity missing", gzipLines(t, lines[1:]), true, n - 1},
		{"one entity extra", gzipLines(t, append(slices.Clone(lines), entityLine(t, testenv.EveryType("p000", "r00000x", 1)))), true, n + 1},
		{"one entity twice", gzipLines(t, append(slices.Clone(lines), lines[0])), true, n + 1},
		{"one entity changed", gzipLines(t, changed), true, n},
	} {
		d := copyDir(t, dir)
		if err := os.WriteFile(filepath.Join(d, filepath.FromSlash(seg.File)), c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		if c.decodes {
			setSegmentBytes(t, d, seg.File, int64(len(c.file)))
		}
		cases = append(cases, damagedCase{name: c.name, loc: tablecopy.Dir(d), seg: seg, decodes: c.decodes, got: c.got})
	}
	return cases
}

// VerifyBackup finds every kind of damage to a segment on its own (no
// account to compare with), as a mismatch naming the segment.
func TestVerifyBackupFindsDamagedSegment(t *testing.T) {
	t.Parallel()
	for _, tc := range damagedBackups(t, testenv.Account(t)) {
		t.Run(tc.name, func(t *testing.T) {
			checks, err := tablecopy.VerifyBackup(context.Background(), tc.loc, nil)
			if err != nil || len(checks) != 1 || checks[0].OK() {
				t.Fatalf("verify: %+v %v", checks, err)
			}
			for _, m := range checks[0].Mismatches {
				if m.Segment == tc.seg.File && m.Want.Count == tc.seg.Entities && (!tc.decodes || m.Got.Count == tc.got) {
					return
				}
			}
			t.Errorf("verify names no mismatch of %s (%d entities): %v", tc.seg.File, tc.got, checks[0].Mismatches)
		})
	}
}

// Restore of a backup with a damaged segment fails with a
// *tablecopy.CorruptError naming the segment, whatever the damage.
func TestRestoreRefusesDamagedSegment(t *testing.T) {
	t.Parallel()
	acct := testenv.Account(t)
	for _, tc := range damagedBackups(t, acct) {
		t.Run(tc.name, func(t *testing.T) {
			dst := newRows(t, acct, false)
			res, err := tablecopy.Restore(context.Background(), tc.loc, acct, &tablecopy.RestoreOptions{ToTable: dst.Name(), Parallel: 1})
			var ce *tablecopy.CorruptError
			if !errors.As(err, &ce) || ce.File != tc.seg.File || ce.Want.Count != tc.seg.Entities || !strings.Contains(err.Error(), "segment "+tc.seg.File) {
				t.Fatalf("restore: %+v, %v; want a *CorruptError of %s", res, err, tc.seg.File)
			}
			if tc.decodes && (ce.Err != nil || ce.Got.Count != tc.got) {
				t.Errorf("restore: %v; want the segment decoded, %d entities", err, tc.got)
			}
		})
	}
}

// setSegmentBytes sets the byte count of segment file in the manifest of
// the backup in dir.
func setSegmentBytes(t *testing.T, dir, file string, n int64) {
	t.Helper()
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	set := false
	for _, tb := range m["tables"].([]any) {
		for _, sg := range tb.(map[string]any)["segments"].([]any) {
			if sg := sg.(map[string]any); sg["file"] == file {
				sg["bytes"], set = n, true
			}
		}
	}
	if !set {
		t.Fatalf("the manifest names no segment %s", file)
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
