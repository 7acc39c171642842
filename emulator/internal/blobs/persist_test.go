package blobs_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/blobs"
	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// TestLocationFiles: contents kept in files are read back by the next
// Open, appends included, also after a torn tail (bytes appended past the
// committed size by a write whose record a crash lost); a replaced or
// deleted blob's file goes, and so does a file no blob names.
func TestLocationFiles(t *testing.T) {
	defer blobs.SetInlineMax(blobs.SetInlineMax(10)) // "first version" and the log past 10 bytes go to files
	dir := filepath.Join(t.TempDir(), "loc")
	files := filepath.Join(dir, disk.BlobDataDir)
	cfg := blobs.Config{Account: rawAccount, Location: dir}
	count := func() int {
		t.Helper()
		es, err := os.ReadDir(files)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	block := map[string]string{"x-ms-blob-type": "BlockBlob"}
	s, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustServe(t, s, "PUT", "box?restype=container", nil, "")
	mustServe(t, s, "PUT", "box/whole", block, "first version")
	mustServe(t, s, "PUT", "box/whole", block, "0123456789abcdefghijklm")
	mustServe(t, s, "PUT", "box/small", block, "in the db")
	mustServe(t, s, "PUT", "box/empty", block, "")
	mustServe(t, s, "PUT", "box/gone", block, "deleted")
	mustServe(t, s, "DELETE", "box/gone", nil, "")
	mustServe(t, s, "PUT", "box/log", map[string]string{"x-ms-blob-type": "AppendBlob"}, "")
	for _, a := range []string{"1234567", "89", "ABCD"} {
		mustServe(t, s, "PUT", "box/log?comp=appendblock", nil, a)
	}
	if n := count(); n != 2 {
		t.Errorf("%d content files for 2 blobs with content", n)
	}
	// Served from the file's mapping once written.
	if got, _ := io.ReadAll(mustServe(t, s, "GET", "box/whole", nil, "").Body); string(got) != "0123456789abcdefghijklm" {
		t.Errorf("whole before reopening: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash's leftovers: a file no record names, and a torn tail.
	os.WriteFile(filepath.Join(files, "leftover"), []byte("x"), 0o644)
	es, _ := os.ReadDir(files)
	for _, e := range es {
		if b, _ := os.ReadFile(filepath.Join(files, e.Name())); string(b) == "123456789ABCD" {
			os.WriteFile(filepath.Join(files, e.Name()), []byte("123456789ABCDTORN"), 0o644)
		}
	}
	s, err = blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := count(); n != 2 {
		t.Errorf("%d content files after reopening, want 2 (the leftover removed)", n)
	}
	mustServe(t, s, "PUT", "box/log?comp=appendblock", nil, "abc")
	for name, want := range map[string]string{"whole": "0123456789abcdefghijklm", "log": "123456789ABCDabc", "empty": "", "small": "in the db"} {
		got, _ := io.ReadAll(mustServe(t, s, "GET", "box/"+name, nil, "").Body)
		if string(got) != want {
			t.Errorf("%s after reopening: %q, want %q", name, got, want)
		}
	}
	mustServe(t, s, "DELETE", "box?restype=container", nil, "")
	if n := count(); n != 0 {
		t.Errorf("%d content files after the container's delete", n)
	}
}

// TestLocationMapsLargeContents: 32 MiB of large blobs, written then
// loaded again, do not stay on the heap: their bytes are mappings of their
// files, both once written and after the next Open.
func TestLocationMapsLargeContents(t *testing.T) {
	dir := t.TempDir()
	cfg := blobs.Config{Account: rawAccount, Location: dir}
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	const n, size = 32, 1 << 20
	before := heap()
	s, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustServe(t, s, "PUT", "box?restype=container", nil, "")
	for i := range n {
		mustServe(t, s, "PUT", fmt.Sprintf("box/b%02d", i), map[string]string{"x-ms-blob-type": "BlockBlob"}, strings.Repeat(string([]byte{byte(i)}), size))
	}
	if grew := heap() - before; grew > n*size/4 {
		t.Errorf("the heap grew %d bytes for %d bytes of blobs written", grew, n*size)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before = heap()
	s, err = blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if grew := heap() - before; grew > n*size/4 {
		t.Errorf("the heap grew %d bytes for %d bytes of blobs loaded", grew, n*size)
	}
	if w := mustServe(t, s, "GET", "box/b07", nil, ""); !bytes.Equal(w.Body.Bytes(), bytes.Repeat([]byte{7}, size)) {
		t.Errorf("b07 after reopening: %d bytes, not its content", w.Body.Len())
	}
}
