package queues

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// TestMain runs the tests with the database's flushes off (disk.SetSync):
// what the tests read comes from the page cache either way, and the 400
// commits of TestPutMessageAnsweredAfterCommit waited 0.24 to 0.39 s for
// the disk (this 2-core machine at load 8 to 9), 0.06 s without.
func TestMain(m *testing.M) {
	disk.SetSync(false)
	os.Exit(m.Run())
}

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

// TestPutMessageAnsweredAfterCommit: a 201 from Put Message means the
// message is in the location's database already, with no Stop or Close
// to write it: 16 senders put 25 messages each, and a read transaction
// begun as each answer arrives finds the message by the id it names.
func TestPutMessageAnsweredAfterCommit(t *testing.T) {
	s, err := Open(Config{Account: "acct", Location: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storeMessages(t, s, "qqq", 0)
	const senders, each = 16, 25
	var wg sync.WaitGroup
	var missing atomic.Int64
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, httptest.NewRequest("POST", "/acct/qqq/messages", strings.NewReader("<QueueMessage><MessageText>m</MessageText></QueueMessage>")))
				var got messagesList
				if w.Code != 201 || xml.Unmarshal(w.Body.Bytes(), &got) != nil || len(got.Messages) != 1 {
					t.Errorf("Put Message: %d %s", w.Code, w.Body)
					return
				}
				s.store.db.View(func(tx *bolt.Tx) error {
					if queueBucket(tx, "qqq").Bucket(bucketMessages).Get([]byte(got.Messages[0].ID)) == nil {
						missing.Add(1)
					}
					return nil
				})
			}
		}()
	}
	wg.Wait()
	if n := missing.Load(); n > 0 {
		t.Errorf("%d of %d messages answered 201 before they were committed", n, senders*each)
	}
}
