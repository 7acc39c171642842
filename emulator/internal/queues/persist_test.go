package queues

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// storeMessages writes n messages to queue name of s's location
// directly, as the service writes them, in one transaction.
func storeMessages(tb testing.TB, s *Service, name string, n int) {
	tb.Helper()
	r := httptest.NewRequest("PUT", "/acct/"+name, nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 201 {
		tb.Fatalf("Create Queue: %d %s", w.Code, w.Body)
	}
	now := time.Now().UTC()
	err := s.store.db.Update(func(tx *bolt.Tx) error {
		mb := queueBucket(tx, name).Bucket(bucketMessages)
		for i := range n {
			m := &message{id: fmt.Sprintf("%08d-0000-0000-0000-000000000000", i), text: "a message of about a hundred bytes, as a worker's queue holds them: ids and a little more",
				inserted: now, expires: now.Add(time.Hour), nextVisible: now, receipt: s.receipt(now, false), seq: uint64(i + 1)}
			v, err := json.Marshal(m.record())
			if err != nil {
				return err
			}
			if err := mb.Put([]byte(m.id), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestLocationLoadsInOrder: messages come back in their order of
// insertion, whatever the order of their ids.
func TestLocationLoadsInOrder(t *testing.T) {
	cfg := Config{Account: "acct", Location: t.TempDir()}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	storeMessages(t, s, "qqq", 3)
	// The last message's id sorts first.
	s.store.db.Update(func(tx *bolt.Tx) error {
		mb := queueBucket(tx, "qqq").Bucket(bucketMessages)
		v := mb.Get([]byte("00000002-0000-0000-0000-000000000000"))
		mb.Delete([]byte("00000002-0000-0000-0000-000000000000"))
		return mb.Put([]byte("0"), v)
	})
	s.Close()
	if s, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := s.queues["qqq"]
	got := q.take(time.Now().UTC(), 3)
	if len(got) != 3 || got[0].seq != 1 || got[2].seq != 3 || q.seq != 3 {
		t.Fatalf("after reopening: %d messages, seq %d", len(got), q.seq)
	}
}

// BenchmarkLocationOpen measures a start of the Queue service with a
// location holding 100,000 messages:
//
//	go test -run '^$' -bench BenchmarkLocationOpen ./emulator/internal/queues/
func BenchmarkLocationOpen(b *testing.B) {
	const n = 100000
	cfg := Config{Account: "acct", Location: b.TempDir()}
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	storeMessages(b, s, "qqq", n)
	s.Close()
	b.ResetTimer()
	for range b.N {
		s, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.queues["qqq"].byID) != n {
			b.Fatalf("%d messages loaded", len(s.queues["qqq"].byID))
		}
		s.Close()
	}
}
