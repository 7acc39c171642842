package blobs

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A page blob in a location (persist.go): its size and sequence number
// in its record (pageRecord), its written pages in bucketPages, one key
// per segment (the blob's nameKey, then the segment's index), its
// snapshots' pages likewise in bucketSnapshotPages under the snapshot's
// key. A Put Page rewrites only the segments it changed; the pages are
// read back into memory at Open.
var (
	bucketPages         = []byte("pages")
	bucketSnapshotPages = []byte("snapshotpages")
)

// pageRecord is a page blob's size and sequence number as stored.
type pageRecord struct {
	Size int64 `json:"size"`
	Seq  int64 `json:"seq,omitempty"`
}

func (b *blob) pageRecord() *pageRecord {
	if b.kind != pageBlob {
		return nil
	}
	return &pageRecord{Size: b.page.size, Seq: b.page.seq}
}

func (r *pageRecord) state() pageState {
	if r == nil {
		return pageState{}
	}
	return pageState{size: r.Size, seq: r.Seq}
}

// segmentKey is the key of segment idx under prefix (a blob's nameKey or
// a snapshot's snapshotKey).
func segmentKey(prefix []byte, idx int64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(idx))
}

// pagePut is one segment's key and stored form, nil when it goes.
type pagePut struct {
	key, value []byte
}

// pagePuts are the segment writes that keep p's segments idxs (all of
// them when all) under prefix; made under the container's lock, applied
// at the commit.
func pagePuts(prefix []byte, p pageSet, idxs []int64, all bool) []pagePut {
	if all {
		out := make([]pagePut, len(p.segs))
		for i, s := range p.segs {
			out[i] = pagePut{segmentKey(prefix, s.idx), encodeSegment(s)}
		}
		return out
	}
	out := make([]pagePut, len(idxs))
	for i, idx := range idxs {
		out[i].key = segmentKey(prefix, idx)
		if s := p.find(idx); s != nil {
			out[i].value = encodeSegment(s)
		}
	}
	return out
}

// applyPagePuts writes puts to b.
func applyPagePuts(b *bolt.Bucket, puts []pagePut) error {
	for _, p := range puts {
		var err error
		if p.value == nil {
			err = b.Delete(p.key)
		} else {
			err = b.Put(p.key, p.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadPages reads the segments stored under prefix in b, dropping those
// at or past size (a resize's commit removes them; none should be left).
func loadPages(b *bolt.Bucket, prefix []byte, size int64) (pageSet, error) {
	var p pageSet
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+8 {
			continue // not a segment's key
		}
		idx := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		if idx*segBytes >= size {
			continue
		}
		s, err := decodeSegment(idx, v)
		if err != nil {
			return pageSet{}, fmt.Errorf("segment %d: %w", idx, err)
		}
		p.segs = append(p.segs, s)
	}
	return p, nil
}
