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

// Restore and VerifyBackup find every kind of damage
// to a segment on their own: content that is not gzip, or stops short,
// and content that is valid gzip of valid entities and yet not the
// manifest's (one entity missing, one extra, one twice, one changed).
// Each is a *tablecopy.CorruptError naming the segment, and a restore of
// it does not succeed.
func TestDamagedSegmentIsCorruptError(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t)
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

	changed := func(t *testing.T, ls [][]byte) [][]byte {
		e, err := entity.ParseEntity(ls[1])
		if err != nil {
			t.Fatal(err)
		}
		e.Properties["Int32"] = entity.Int32(-7)
		return append(ls[:1:1], append([][]byte{entityLine(t, e)}, ls[2:]...)...)
	}
	n := seg.Entities
	for _, tc := range []struct {
		name string
		file func(t *testing.T) []byte
		// decodes is set for valid gzip of valid entities, got their
		// count: the manifest's byte count of the segment is set to the
		// file's, as a rewrite of both would, so that only the count
		// and checksum can tell.
		decodes bool
		got     int64
	}{
		{"not gzip", func(*testing.T) []byte { return []byte("not gzip") }, false, 0},
		{"cut short", func(t *testing.T) []byte { b := gzipLines(t, lines); return b[:len(b)/2] }, false, 0},
		{"a line not an entity", func(t *testing.T) []byte {
			return gzipLines(t, append(slices.Clone(lines), []byte(`{"PartitionKey":`)))
		}, false, 0},
		{"one entity missing", func(t *testing.T) []byte { return gzipLines(t, slices.Clone(lines)[1:]) }, true, n - 1},
		{"one entity extra", func(t *testing.T) []byte {
			return gzipLines(t, append(slices.Clone(lines), entityLine(t, testenv.EveryType("p000", "r00000x", 1))))
		}, true, n + 1},
		{"one entity twice", func(t *testing.T) []byte { return gzipLines(t, append(slices.Clone(lines), lines[0])) }, true, n + 1},
		{"one entity changed", func(t *testing.T) []byte { return gzipLines(t, changed(t, slices.Clone(lines))) }, true, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := copyDir(t, dir)
			file := tc.file(t)
			if err := os.WriteFile(filepath.Join(d, filepath.FromSlash(seg.File)), file, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.decodes {
				setSegmentBytes(t, d, seg.File, int64(len(file)))
			}
			loc := tablecopy.Dir(d)

			checks, err := tablecopy.VerifyBackup(ctx, loc, nil)
			if err != nil || len(checks) != 1 || checks[0].OK() {
				t.Fatalf("verify: %+v %v", checks, err)
			}
			found := false
			for _, m := range checks[0].Mismatches {
				found = found || m.Segment == seg.File
			}
			if !found {
				t.Errorf("verify names no mismatch of %s: %v", seg.File, checks[0].Mismatches)
			}

			dst := newRows(t, acct, false)
			rres, err := tablecopy.Restore(ctx, loc, acct, &tablecopy.RestoreOptions{ToTable: dst.Name(), Parallel: 1})
			var ce *tablecopy.CorruptError
			if !errors.As(err, &ce) || ce.File != seg.File || ce.Want.Count != seg.Entities || !strings.Contains(err.Error(), "segment "+seg.File) {
				t.Fatalf("restore: %+v, %v; want a *CorruptError of %s", rres, err, seg.File)
			}
			if tc.decodes && (ce.Err != nil || ce.Got.Count != tc.got) {
				t.Errorf("restore: %v; want the segment decoded, %d entities", err, tc.got)
			}
			t.Log(err)
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
