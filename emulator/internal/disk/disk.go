// Package disk opens the files the emulator keeps under a location
// (emulator.Options.Location, `tablekit emulator --location DIR`): one
// database per service, so that each service's writes are committed, and
// recovered, on their own.
//
// The store is bbolt: keys kept in order on disk (a B+tree in one file), a
// write transaction committed by copy on write and an fsync'd meta page,
// so a process killed at any moment leaves the last committed transaction
// and nothing half done, and an open that does not replay anything: the
// file is mapped, and what the emulator holds in memory is what the
// operating system's page cache holds. That is what the emulator needs of
// a store: ordered keys for its scans, atomic entity group transactions,
// and a restart within seconds whatever the size.
package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The files each service keeps in a location. Reset removes exactly these.
const (
	TablesFile = "tables.db"
	QueuesFile = "queues.db"
	BlobsFile  = "blobs.db"
	// BlobDataDir holds blob and block contents too large to keep in
	// BlobsFile, when the Blob service keeps them apart.
	BlobDataDir = "blobdata"
)

// ErrInUse is returned (wrapped) by Open when another process, or another
// emulator in this one, holds the location's database.
var ErrInUse = errors.New("in use by another emulator")

// LockWait is how long Open waits for another holder to let go of a
// database before it returns ErrInUse, unless SetLockWait says otherwise.
const LockWait = time.Second

var lockWait atomic.Int64 // a time.Duration; zero means LockWait

// SetLockWait sets how long Open waits for another holder (d <= 0: the
// default, LockWait) and returns the setting before. It is for tests
// that check ErrInUse, which call it before they open anything: each
// refused Open would otherwise wait the whole second.
func SetLockWait(d time.Duration) time.Duration {
	old := time.Duration(lockWait.Swap(int64(max(d, 0))))
	if old == 0 {
		old = LockWait
	}
	return old
}

var syncOff atomic.Bool

// SetSync turns the flushes to the disk (fsync) on, as they are unless it
// is called, or off, and returns the setting before. With them off, a
// commit is answered once it is in the operating system's page cache
// rather than on the disk: this process, and any process after it, reads
// the same; only a crash of the machine itself could lose it. It is for
// tests, which can check nothing of the flush (the page cache answers
// their reads either way) and whose commits, an fsync each, waited 0.1 to
// 2 ms apiece, longer on a machine whose disk others keep busy. Call it
// before opening anything.
func SetSync(on bool) (was bool) { return !syncOff.Swap(!on) }

// Syncs reports whether commits are flushed to the disk (SetSync): what
// a service that writes files of its own beside a database follows too.
func Syncs() bool { return !syncOff.Load() }

// Open opens the database called name in dir, creating dir and the file
// when they do not exist. Only one emulator may hold a database: Open
// returns an error wrapping ErrInUse when another does.
func Open(dir, name string) (*bolt.DB, error) {
	if dir == "" {
		return nil, errors.New("emulator: location: no directory given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("emulator: location %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	wait := time.Duration(lockWait.Load())
	if wait == 0 {
		wait = LockWait
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: wait, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("emulator: location %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("emulator: location %s: %w", path, err)
	}
	db.NoSync = syncOff.Load()
	return db, nil
}

// Reset removes every file the emulator keeps in dir (TablesFile,
// QueuesFile, BlobsFile, BlobDataDir), leaving dir itself and anything
// else in it. It must not run while an emulator holds the location.
func Reset(dir string) error {
	if dir == "" {
		return errors.New("emulator: location: no directory given")
	}
	for _, name := range []string{TablesFile, QueuesFile, BlobsFile, BlobDataDir} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("emulator: reset %s: %w", dir, err)
		}
	}
	return nil
}
