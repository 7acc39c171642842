package tablecopy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
)

// A local job store's conditional writes: a create fails when the object
// exists, and of writers that read the same version and write at once,
// exactly one wins each round, the others failing with errStale, as two
// holders of one range must. A directory outside the worker's --job-dir
// is refused.
func TestDirJobStoreConditionalWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dirJobStore{d: Dir(t.TempDir()).s.(dirStore)}
	if _, _, err := s.load(ctx, "range-00000"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("load of a missing state: %v", err)
	}
	if _, err := s.save(ctx, "range-00000", []byte(`{"n":0}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.save(ctx, "range-00000", []byte(`{"n":1}`), ""); !errors.Is(err, errStale) {
		t.Fatalf("a second create: %v, want errStale", err)
	}
	for round := range 20 {
		_, etag, err := s.load(ctx, "range-00000")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, stale := 0, 0
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.save(ctx, "range-00000", fmt.Appendf(nil, `{"round":%d,"writer":%d}`, round, w), etag)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, errStale):
					stale++
				default:
					t.Errorf("round %d writer %d: %v", round, w, err)
				}
			}()
		}
		wg.Wait()
		if won != 1 || stale != 7 {
			t.Fatalf("round %d: %d writes won and %d were stale; want 1 and 7", round, won, stale)
		}
	}
	root := t.TempDir()
	for dir, ok := range map[string]bool{root: true, filepath.Join(root, "a", "b"): true, root + "x": false, filepath.Dir(root): false} {
		if got := jobDirAllowed(dir, []string{root}); got != ok {
			t.Errorf("jobDirAllowed(%s, [%s]) = %v, want %v", dir, root, got, ok)
		}
	}
}
