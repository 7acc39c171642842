package queues

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// Persistence (Config.Location): the service keeps everything in memory,
// as without a location, and writes each change through to the location's
// database (disk.QueuesFile) before it answers: a write that was answered
// survives a crash, and Open loads the state back.
//
// The database holds one bucket per queue in bucketQueues, each with the
// queue's record (keyQueue) and a bucket of its messages (bucketMessages,
// by message id); the service's properties are in bucketService. Records
// are JSON, one encoding per record type (queueRecord, messageRecord).
var (
	bucketQueues   = []byte("queues")
	bucketService  = []byte("service")
	bucketMessages = []byte("messages")
	keyQueue       = []byte("queue")
	keyProperties  = []byte("properties")
)

// store is a service's database and the group committing to it.
type store struct {
	db    *bolt.DB
	group *disk.Group
}

// queueRecord is a queue as stored: what survives of it but its messages.
type queueRecord struct {
	Metadata map[string]string `json:"metadata,omitempty"`
	ACL      []acl.Identifier  `json:"acl,omitempty"`
}

func (q *queue) record() queueRecord { return queueRecord{Metadata: q.metadata, ACL: q.acl} }

// messageRecord is a message as stored; its times are absolute, so that a
// message invisible or expiring at a time stays so across a restart.
type messageRecord struct {
	ID          string    `json:"id"`
	Text        string    `json:"text"`
	Inserted    time.Time `json:"inserted"`
	Expires     time.Time `json:"expires"`
	NextVisible time.Time `json:"nextVisible"`
	Dequeues    int64     `json:"dequeues"`
	Receipt     string    `json:"receipt"`
	Seq         uint64    `json:"seq"`
}

func (m *message) record() messageRecord {
	return messageRecord{ID: m.id, Text: m.text, Inserted: m.inserted, Expires: m.expires,
		NextVisible: m.nextVisible, Dequeues: m.dequeues, Receipt: m.receipt, Seq: m.seq}
}

func (r messageRecord) message() *message {
	return &message{id: r.ID, text: r.Text, inserted: r.Inserted, expires: r.Expires,
		nextVisible: r.NextVisible, dequeues: r.Dequeues, receipt: r.Receipt, seq: r.Seq}
}

// Open returns the Queue service of cfg: with cfg.Location, the state
// kept there, loaded back, and every change written through to it; else an
// empty service in memory, as New. Close releases the location.
func Open(cfg Config) (*Service, error) {
	s := New(cfg)
	if cfg.Location == "" {
		return s, nil
	}
	db, err := disk.Open(cfg.Location, disk.QueuesFile)
	if err != nil {
		return nil, err
	}
	if err := s.load(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("emulator: queues in %s: %w", cfg.Location, err)
	}
	s.store = &store{db: db, group: disk.NewGroup(db)}
	return s, nil
}

// Close commits what was submitted and closes the location's database. It
// does nothing for a service in memory.
func (s *Service) Close() error {
	if s.store == nil {
		return nil
	}
	s.store.group.Close()
	return s.store.db.Close()
}

// load reads the database into the service, dropping the messages that
// expired meanwhile.
func (s *Service) load(db *bolt.DB) error {
	now := s.now()
	var maxTick uint64
	return db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketService); b != nil {
			if v := b.Get(keyProperties); v != nil {
				var p svcprops.Properties
				if err := xml.Unmarshal(v, &p); err != nil {
					return fmt.Errorf("service properties: %w", err)
				}
				s.props = p
			}
		}
		qs, err := tx.CreateBucketIfNotExists(bucketQueues)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketService); err != nil {
			return err
		}
		err = qs.ForEachBucket(func(name []byte) error {
			qb := qs.Bucket(name)
			var rec queueRecord
			if err := json.Unmarshal(qb.Get(keyQueue), &rec); err != nil {
				return fmt.Errorf("queue %s: %w", name, err)
			}
			q := newQueue(string(name), rec.Metadata)
			q.acl = rec.ACL
			if q.metadata == nil {
				q.metadata = map[string]string{}
			}
			mb := qb.Bucket(bucketMessages)
			if mb == nil {
				return fmt.Errorf("queue %s: no messages bucket", name)
			}
			var msgs []*message
			var expired [][]byte
			err := mb.ForEach(func(k, v []byte) error {
				var r messageRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("queue %s, message %s: %w", name, k, err)
				}
				if !r.Expires.After(now) {
					expired = append(expired, append([]byte(nil), k...))
					return nil
				}
				msgs = append(msgs, r.message())
				maxTick = max(maxTick, receiptTick(r.Receipt))
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range expired {
				if err := mb.Delete(k); err != nil {
					return err
				}
			}
			// Messages go back in their order of insertion, which breaks
			// ties between equal times as it did before the restart.
			slices.SortFunc(msgs, func(a, b *message) int { return cmp.Compare(a.seq, b.seq) })
			for _, m := range msgs {
				q.seq = m.seq - 1
				q.put(m) // gives m its stored seq back
			}
			q.durable = true
			s.queues[q.name] = q
			return nil
		})
		if err != nil {
			return err
		}
		s.lastTick.Store(maxTick)
		return nil
	})
}

// receiptTick is the time stamp of a pop receipt, 0 for one it cannot
// read.
func receiptTick(r string) uint64 {
	b, err := base64.StdEncoding.DecodeString(r)
	if err != nil || len(b) < receiptLen {
		return 0
	}
	return binary.LittleEndian.Uint64(b[12:20])
}

// commit submits fn to the location, or returns nil for a service in
// memory. The caller holds the lock that orders the change in memory and
// waits (wait) once it has released it.
func (s *Service) commit(fn func(tx *bolt.Tx) error) *disk.Pending {
	if s.store == nil {
		return nil
	}
	return s.store.group.Submit(fn)
}

// wait waits for p's commit; a change that could not be written is
// answered 500 InternalError (the change stays in memory).
func wait(p *disk.Pending) *answer.Error {
	if p == nil {
		return nil
	}
	if p.Wait() != nil {
		return answer.InternalError()
	}
	return nil
}

// queueBucket returns the bucket of the queue named name, or nil when
// the queue was deleted: a write that reached the queue in memory just
// before its delete is committed after it, to nothing.
func queueBucket(tx *bolt.Tx, name string) *bolt.Bucket {
	return tx.Bucket(bucketQueues).Bucket([]byte(name))
}

// saveQueue writes q's record, creating its buckets when create is set.
// q is locked.
func (s *Service) saveQueue(q *queue, create bool) *disk.Pending {
	if s.store == nil {
		return nil
	}
	rec, err := json.Marshal(q.record())
	name := q.name
	return s.commit(func(tx *bolt.Tx) error {
		if err != nil {
			return err
		}
		if create {
			qs := tx.Bucket(bucketQueues)
			// A queue deleted and created again starts empty.
			if qs.Bucket([]byte(name)) != nil {
				if err := qs.DeleteBucket([]byte(name)); err != nil {
					return err
				}
			}
			b, err := qs.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			if _, err := b.CreateBucket(bucketMessages); err != nil {
				return err
			}
		}
		b := queueBucket(tx, name)
		if b == nil {
			return nil
		}
		return b.Put(keyQueue, rec)
	})
}

// dropQueue deletes the queue named name and its messages.
func (s *Service) dropQueue(name string) *disk.Pending {
	return s.commit(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketQueues).DeleteBucket([]byte(name))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// saveMessages writes ms (their state now) to q, deletes the messages
// named by gone, and the messages q dropped as expired since its last
// write. With clear, every message of q is deleted first. q is locked.
func (s *Service) saveMessages(q *queue, clear bool, gone []string, ms ...*message) *disk.Pending {
	if s.store == nil {
		return nil
	}
	type kv struct {
		k   []byte
		v   []byte
		err error
	}
	puts := make([]kv, len(ms))
	for i, m := range ms {
		v, err := json.Marshal(m.record())
		puts[i] = kv{[]byte(m.id), v, err}
	}
	gone = append(gone, q.expired...)
	q.expired = nil
	name := q.name
	return s.commit(func(tx *bolt.Tx) error {
		qb := queueBucket(tx, name)
		if qb == nil {
			return nil
		}
		if clear {
			if err := qb.DeleteBucket(bucketMessages); err != nil {
				return err
			}
			if _, err := qb.CreateBucket(bucketMessages); err != nil {
				return err
			}
		}
		mb := qb.Bucket(bucketMessages)
		for _, id := range gone {
			if err := mb.Delete([]byte(id)); err != nil {
				return err
			}
		}
		for _, p := range puts {
			if p.err != nil {
				return p.err
			}
			if err := mb.Put(p.k, p.v); err != nil {
				return err
			}
		}
		return nil
	})
}

// saveProperties writes the service's properties. s.mu is held.
func (s *Service) saveProperties() *disk.Pending {
	if s.store == nil {
		return nil
	}
	v, err := xml.Marshal(&s.props)
	return s.commit(func(tx *bolt.Tx) error {
		if err != nil {
			return err
		}
		return tx.Bucket(bucketService).Put(keyProperties, v)
	})
}
