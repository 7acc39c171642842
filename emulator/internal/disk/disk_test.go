package disk_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tablekit/tablekit/emulator/internal/disk"
)

func TestOpenKeepsWhatWasCommitted(t *testing.T) {
	// The second Open is refused after one attempt, not after LockWait.
	defer disk.SetLockWait(disk.SetLockWait(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "loc")
	db, err := disk.Open(dir, disk.TablesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("t"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := disk.Open(dir, disk.TablesFile); !errors.Is(err, disk.ErrInUse) {
		t.Fatalf("second Open: %v, want ErrInUse", err)
	}
	db.Close()
	db, err = disk.Open(dir, disk.TablesFile)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("t")); b != nil {
			got = string(b.Get([]byte("k")))
		}
		return nil
	})
	db.Close()
	if got != "v" {
		t.Fatalf("after reopening: %q, want %q", got, "v")
	}
}

func TestResetRemovesOnlyTheEmulatorsFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{disk.TablesFile, disk.QueuesFile, "mine.txt"} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, disk.BlobDataDir, "a"), 0o755)
	if err := disk.Reset(dir); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "mine.txt" {
		t.Fatalf("after Reset: %v, want only mine.txt", left)
	}
	if err := disk.Reset(""); err == nil {
		t.Fatal("Reset(\"\"): no error")
	}
}
