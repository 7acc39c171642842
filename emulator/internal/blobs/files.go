package blobs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// Content files: with a location, each committed blob's content is a
// file in disk.BlobDataDir, named at random when the content is first
// written (a Put Blob or Put Block List writes a new file; an Append Block
// writes at its offset in the blob's file). A file is written and fsync'd
// before the record naming it is committed, and removed once no committed
// record names it. Files are never truncated or written below a committed
// size, so a mapping of one (mapFile) stays valid while readers hold it,
// even after the file is removed.

// newFileName returns a new content file's name.
func newFileName() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fileWrite is the writing of data at off in the content file name of
// dir, done once by whichever comes first: the request's answer (outside
// every lock, so that writers write in parallel) or the commit that needs
// it on disk.
type fileWrite struct {
	dir, name string
	off       int64
	data      []byte
	create    bool // a new file: its directory entry is fsync'd too

	once sync.Once
	err  error
}

// do writes the file once and returns the error it gave.
func (f *fileWrite) do() error {
	f.once.Do(func() { f.err = f.write() })
	return f.err
}

func (f *fileWrite) write() error {
	path := filepath.Join(f.dir, f.name)
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fd.WriteAt(f.data, f.off)
	if err == nil && disk.Syncs() {
		err = fd.Sync()
	}
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err != nil || !f.create || !disk.Syncs() {
		return err
	}
	d, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	return err
}

// removeUnnamed removes the files of dir that named does not hold.
func removeUnnamed(dir string, named map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !named[e.Name()] && !strings.HasPrefix(e.Name(), ".") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("removing a content file no blob names: %w", err)
			}
		}
	}
	return nil
}
