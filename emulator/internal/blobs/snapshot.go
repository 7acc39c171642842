package blobs

import (
	"net/http"
	"slices"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// snapshot is a read-only copy of a blob as it was at a time, named by
// that time (x-ms-snapshot, the snapshot query parameter).
type snapshot struct {
	at string
	b  *blob
}

// snapshotTime is the form of a snapshot's name: UTC to the 100 ns tick,
// 7 digits, as Azure writes it (REST "Creating a snapshot of a blob").
const snapshotTime = "2006-01-02T15:04:05.0000000Z"

var (
	errSnapshotsPresent = answer.New(http.StatusConflict, "SnapshotsPresent", "This operation is not permitted while the blob has snapshots.")
)

// snapshotAt is the snapshot of b named at, or nil.
func (b *blob) snapshotAt(at string) *blob {
	for _, s := range b.snapshots {
		if s.at == at {
			return s.b
		}
	}
	return nil
}

// snapshotBlob is Snapshot Blob: a read-only copy of the blob as it is,
// with the request's metadata or else the blob's, named by its time. The
// blob's ETag and Last-Modified do not change. The write conditions
// apply; a lease ID given must be the blob's lease, none is needed (REST
// "Snapshot Blob"). 201 with x-ms-snapshot.
func (s *Service) snapshotBlob(q *request) *answer.Error {
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	cond.leaseOptional = true
	md, e := parseMetadata(q.r.Header)
	if e != nil {
		return e
	}
	c, b, e := s.lockExisting(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	if b.tiering.current(s.cfg.Now).archived() {
		return errBlobArchived
	}
	t := s.cfg.Now().UTC().Truncate(100 * time.Nanosecond)
	if n := len(b.snapshots); n > 0 {
		// Names are unique and increasing even when two snapshots share
		// a tick.
		if last, err := time.Parse(snapshotTime, b.snapshots[n-1].at); err == nil && !t.After(last) {
			t = last.Add(100 * time.Nanosecond)
		}
	}
	at := t.Format(snapshotTime)
	sb := *b
	sb.data = slices.Clip(b.data) // an append to the blob must not reach the snapshot's array
	sb.lease, sb.snapshots = lease{}, nil
	if md != nil {
		sb.meta = md
	}
	b.snapshots = append(slices.Clip(b.snapshots), snapshot{at: at, b: &sb})
	q.pending = s.saveSnapshot(c, q.blob, at, &sb)
	h := setVersion(q, b.etag, b.modified)
	h.Set("x-ms-snapshot", at)
	h.Set("x-ms-request-server-encrypted", "false")
	q.w.WriteHeader(http.StatusCreated)
	return nil
}

// deleteSnapshot is Delete Blob of a snapshot (?snapshot=): 202, or 404
// BlobNotFound when the blob has no snapshot of that name.
func (s *Service) deleteSnapshot(q *request) *answer.Error {
	at := q.query.Get("snapshot")
	if v := q.r.Header.Get("x-ms-delete-snapshots"); v != "" {
		// x-ms-delete-snapshots is for the base blob only (REST "Delete
		// Blob").
		return answer.InvalidHeader("x-ms-delete-snapshots", v)
	}
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	b := c.blobs[q.blob]
	var sb *blob
	if b != nil {
		sb = b.snapshotAt(at)
	}
	if sb == nil {
		return errBlobNotFound
	}
	if e := cond.writeConditions(true, sb.etag, sb.modified); e != nil {
		return e
	}
	if !cond.tagsMet(sb.tags) {
		return errConditionNotMet
	}
	b.snapshots = slices.DeleteFunc(slices.Clone(b.snapshots), func(s snapshot) bool { return s.at == at })
	q.pending = s.deleteSnapshotRecord(c, q.blob, at)
	setCommon(q.w.Header(), q.r)
	q.w.WriteHeader(http.StatusAccepted)
	return nil
}

// parseDeleteSnapshots reads x-ms-delete-snapshots: "", include or only.
func parseDeleteSnapshots(h http.Header) (string, *answer.Error) {
	switch v := h.Get("x-ms-delete-snapshots"); v {
	case "", "include", "only":
		return v, nil
	default:
		return "", answer.InvalidHeader("x-ms-delete-snapshots", v)
	}
}
