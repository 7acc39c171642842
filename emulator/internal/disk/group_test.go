package disk_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// TestGroupCommitsInOrder: writes submitted one after another land in that
// order even when they share a transaction, a failing write costs no
// other, and a write after Close is refused.
func TestGroupCommitsInOrder(t *testing.T) {
	db, err := disk.Open(filepath.Join(t.TempDir(), "loc"), disk.QueuesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The failing write makes its transaction's 512 writes commit one by
	// one, an fsync each: 0.8 to 1.9 s of waiting for the disk (this
	// 2-core machine, load 1 to 9), which nothing here checks.
	db.NoSync = true
	g := disk.NewGroup(db)
	var ps []*disk.Pending
	for i := range 1000 {
		ps = append(ps, g.Submit(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			if i == 500 {
				return errors.New("refused")
			}
			return b.Put([]byte("last"), binary.BigEndian.AppendUint64(nil, uint64(i)))
		}))
	}
	for i, p := range ps {
		if err := p.Wait(); (err != nil) != (i == 500) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	g.Close()
	if err := g.Submit(func(*bolt.Tx) error { return nil }).Wait(); !errors.Is(err, disk.ErrClosed) {
		t.Fatalf("Submit after Close: %v, want ErrClosed", err)
	}
	db.View(func(tx *bolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket([]byte("b")).Get([]byte("last"))); v != 999 {
			t.Errorf("last write on disk: %d, want 999", v)
		}
		return nil
	})
}

// TestGroupWaitReturnsAfterItsCommit: Wait returns only once its own
// write is committed, whichever writer ran the commit and however the
// writes fell into transactions: a read transaction begun as Wait returns
// finds the write. 32 writers make 40 writes each, each waiting on its
// write while others commit theirs.
func TestGroupWaitReturnsAfterItsCommit(t *testing.T) {
	db, err := disk.Open(filepath.Join(t.TempDir(), "loc"), disk.QueuesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	g := disk.NewGroup(db)
	defer g.Close()
	const writers, each = 32, 40
	var missing atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := binary.BigEndian.AppendUint64(nil, uint64(w*each+i))
				if err := g.Submit(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put(key, key) }).Wait(); err != nil {
					t.Error(err)
					return
				}
				db.View(func(tx *bolt.Tx) error {
					if tx.Bucket([]byte("b")).Get(key) == nil {
						missing.Add(1)
					}
					return nil
				})
			}
		}()
	}
	wg.Wait()
	if n := missing.Load(); n > 0 {
		t.Errorf("%d of %d writes not committed when their Wait returned", n, writers*each)
	}
}

// BenchmarkCommit compares a transaction (and its fsyncs) per write with
// Group, for 1 and 16 writers of 100 bytes each:
//
//	go test -run '^$' -bench BenchmarkCommit ./emulator/internal/disk/
func BenchmarkCommit(b *testing.B) {
	for _, writers := range []int{1, 16} {
		for _, mode := range []string{"update", "group"} {
			b.Run(fmt.Sprintf("writers=%d/mode=%s", writers, mode), func(b *testing.B) {
				db, err := disk.Open(b.TempDir(), disk.QueuesFile)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err })
				g := disk.NewGroup(db)
				defer g.Close()
				val := make([]byte, 100)
				var n atomic.Int64
				write := func(tx *bolt.Tx) error {
					return tx.Bucket([]byte("b")).Put(binary.BigEndian.AppendUint64(nil, uint64(n.Add(1))), val)
				}
				var wg sync.WaitGroup
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ResetTimer()
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for left.Add(-1) >= 0 {
							var err error
							if mode == "update" {
								err = db.Update(write)
							} else {
								err = g.Submit(write).Wait()
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}
