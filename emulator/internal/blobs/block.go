package blobs

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// putBlob is Put Blob: a block blob in one request, or a new, empty
// append blob. 201; with If-None-Match: * on an existing blob, 409
// BlobAlreadyExists.
func (s *Service) putBlob(q *request) *answer.Error {
	h := q.r.Header
	if h.Get("x-ms-copy-source") != "" {
		// Put Blob From URL (Copy Blob, which sends no x-ms-blob-type,
		// is copyBlob).
		return s.putBlobFromURL(q)
	}
	var kind blobKind
	switch v := h.Get("x-ms-blob-type"); v {
	case "BlockBlob":
		kind = blockBlob
	case "AppendBlob":
		kind = appendBlob
	case "PageBlob":
		return s.putPageBlob(q)
	case "":
		return answer.MissingHeader("x-ms-blob-type")
	default:
		return answer.InvalidHeader("x-ms-blob-type", v)
	}
	cond, md, props, tags, e := parseWrite(h, true, s.cfg.Now)
	if e != nil {
		return e
	}
	tier, e := uploadTier(q.r, kind, s.cfg.Now().UTC())
	if e != nil {
		return e
	}
	var data []byte
	var sums checksums
	if kind == blockBlob {
		if data, e = readBody(q, maxPutBlob); e != nil {
			return e
		}
		if sums, e = checkBody(h, data); e != nil {
			return e
		}
		if props.contentMD5 == nil {
			props.contentMD5 = sums.contentMD5()
		}
	} else if e := requireNoBody(q); e != nil {
		// An append blob is created empty.
		return e
	}
	c, _, e := s.lockReplaceable(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	now, etag := s.clock.next()
	rh := s.replaceBlob(q, c, &blob{kind: kind, data: data, meta: md, tags: tags, tiering: tier, props: props, etag: etag, modified: now, created: now})
	if kind == blockBlob {
		sums.setWhole(rh)
	}
	return answerCreated(q)
}

// blockID reads the blockid query parameter: base64 of at most 64
// bytes.
func blockID(q *request) (string, *answer.Error) {
	v := q.query
	if !v.Has("blockid") {
		return "", answer.MissingQueryParameter("blockid")
	}
	id := v.Get("blockid")
	raw, err := base64.StdEncoding.DecodeString(id)
	if err != nil || id == "" {
		return "", answer.InvalidQueryParameter("blockid", id, "")
	}
	if len(raw) > maxBlockIDBytes {
		return "", answer.OutOfRangeInput()
	}
	return string(raw), nil
}

// putBlock is Put Block: the block is staged, uncommitted, under its id
// (a block staged again under the same id replaces it). All ids of a
// blob have one length. 201.
func (s *Service) putBlock(q *request) *answer.Error {
	if q.r.Header.Get("x-ms-copy-source") != "" {
		return s.putBlockFromURL(q)
	}
	id, e := blockID(q)
	if e != nil {
		return e
	}
	data, e := readBody(q, maxPutBlock)
	if e != nil {
		return e
	}
	sums, e := checkBody(q.r.Header, data)
	if e != nil {
		return e
	}
	return s.stageBlock(q, id, data, sums)
}

// stageBlock stages data as the uncommitted block id of q's blob and
// answers Put Block's 201 with sums.
func (s *Service) stageBlock(q *request, id string, data []byte, sums checksums) *answer.Error {
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	if b := c.blobs[q.blob]; b != nil {
		// "Required if the blob has an active lease" (REST "Put Block").
		if e := checkLease(b.lease.current(s.cfg.Now), q.r.Header.Get("x-ms-lease-id"), true, blobLeaseErrors); e != nil {
			return e
		}
		if b.kind != blockBlob {
			return errInvalidBlobType
		}
		if len(b.blocks) > 0 && len(b.blocks[0].id) != len(id) {
			return errInvalidBlobOrBlock
		}
	}
	st := c.staged[q.blob]
	if st == nil {
		st = &staging{blocks: map[string][]byte{}}
		st.modified, st.etag = s.clock.next()
		c.staged[q.blob] = st
	}
	if len(st.order) > 0 && len(st.order[0]) != len(id) {
		return errInvalidBlobOrBlock
	}
	if _, ok := st.blocks[id]; ok {
		st.order = slices.DeleteFunc(st.order, func(x string) bool { return x == id })
	} else if len(st.order) >= maxUncommitted {
		return errUncommittedBlockCount
	}
	st.order = append(st.order, id)
	st.blocks[id] = data
	q.pending = s.saveBlock(c, q.blob, st, id, data)
	h := q.w.Header()
	setCommon(h, q.r)
	sums.set(h, q.r)
	return answerCreated(q)
}

// listEntry is one entry of a Put Block List body.
type listEntry struct {
	kind string // Committed, Uncommitted or Latest
	id   string // decoded
}

// maxBlockListBody bounds a Put Block List body: 50,000 ids of 64
// bytes in base64, in their elements.
const maxBlockListBody = 8 << 20

// parseBlockList reads <BlockList> with its <Committed>, <Uncommitted>
// and <Latest> ids in document order.
func parseBlockList(data []byte) ([]listEntry, *answer.Error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var out []listEntry
	depth := 0
	var cur *listEntry
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, answer.InvalidXMLDocument()
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				if t.Name.Local != "BlockList" {
					return nil, answer.InvalidXMLDocument()
				}
			case 2:
				switch t.Name.Local {
				case "Committed", "Uncommitted", "Latest":
				default:
					return nil, errInvalidBlockList
				}
				out = append(out, listEntry{kind: t.Name.Local})
				cur = &out[len(out)-1]
			default:
				return nil, errInvalidBlockList
			}
		case xml.CharData:
			if cur != nil {
				cur.id += string(t)
			}
		case xml.EndElement:
			depth--
			if depth == 1 && cur != nil {
				raw, err := base64.StdEncoding.DecodeString(cur.id)
				if err != nil || cur.id == "" {
					return nil, errInvalidBlockList
				}
				cur.id = string(raw)
				cur = nil
			}
		}
	}
	if depth != 0 {
		return nil, answer.InvalidXMLDocument()
	}
	return out, nil
}

// putBlockList is Put Block List: the blob becomes the listed blocks,
// each from the uncommitted (Uncommitted), the committed (Committed) or
// the uncommitted then the committed blocks (Latest). The blob's other
// uncommitted blocks are discarded. 201.
func (s *Service) putBlockList(q *request) *answer.Error {
	h := q.r.Header
	cond, md, props, tags, e := parseWrite(h, false, s.cfg.Now)
	if e != nil {
		return e
	}
	tier, e := uploadTier(q.r, blockBlob, s.cfg.Now().UTC())
	if e != nil {
		return e
	}
	body, e := readBody(q, maxBlockListBody)
	if e != nil {
		return e
	}
	sums, e := checkBody(h, body)
	if e != nil {
		return e
	}
	list, e := parseBlockList(body)
	if e != nil {
		return e
	}
	if len(list) > maxBlockList {
		return errBlockListTooLong
	}
	// An archived blob is a block blob (only those take a tier), so that
	// replaceable's refusal of one comes before or after InvalidBlobType
	// alike.
	c, old, e := s.lockReplaceable(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	created := time.Time{}
	committed := map[string][]byte{}
	if old != nil {
		if old.kind != blockBlob {
			return errInvalidBlobType
		}
		created = old.created
		for _, b := range old.blocks {
			committed[b.id] = old.data[b.off : b.off+b.len]
		}
	} else if cond.ifTags != nil {
		// x-ms-if-tags on a blob Put Block List creates fails: a real
		// account's answer (Azure/azure-sdk-for-net#24650, #20931: 412
		// for staged uploads of new blobs, where Put Blob succeeds).
		return errConditionNotMet
	}
	st := c.staged[q.blob]
	uncommitted := map[string][]byte{}
	if st != nil {
		uncommitted = st.blocks
	}
	parts := make([][]byte, len(list))
	size := 0
	for i, ent := range list {
		var p []byte
		var ok bool
		switch ent.kind {
		case "Uncommitted":
			p, ok = uncommitted[ent.id]
		case "Committed":
			p, ok = committed[ent.id]
		default:
			if p, ok = uncommitted[ent.id]; !ok {
				p, ok = committed[ent.id]
			}
		}
		if !ok {
			return errInvalidBlockList
		}
		parts[i] = p
		size += len(p)
	}
	data := make([]byte, 0, size)
	blocks := make([]block, len(list))
	for i, p := range parts {
		blocks[i] = block{id: list[i].id, off: len(data), len: len(p)}
		data = append(data, p...)
	}
	now, etag := s.clock.next()
	if old == nil {
		created = now
	}
	rh := s.replaceBlob(q, c, &blob{kind: blockBlob, data: data, blocks: blocks, meta: md, tags: tags, tiering: tier,
		props: props, etag: etag, modified: now, created: created})
	sums.set(rh, q.r)
	return answerCreated(q)
}

type xmlBlock struct {
	Name string `xml:"Name"`
	Size int    `xml:"Size"`
}

// xmlBlockList is Get Block List's answer: the lists the request asked
// for (blocklisttype), each written even when empty; a list it did not
// ask for is left out, as Azure answers (the Python SDK's recordings of
// 2019: blocklisttype=committed answers CommittedBlocks alone,
// uncommitted UncommittedBlocks alone).
type xmlBlockList struct {
	XMLName     xml.Name   `xml:"BlockList"`
	Committed   *xmlBlocks `xml:"CommittedBlocks"`
	Uncommitted *xmlBlocks `xml:"UncommittedBlocks"`
}

// xmlBlocks is one list of blocks.
type xmlBlocks struct {
	Blocks []xmlBlock `xml:"Block"`
}

// getBlockList is Get Block List: the committed blocks, the uncommitted
// ones, or all (blocklisttype), of a block blob or of a blob that has
// only uncommitted blocks.
func (s *Service) getBlockList(q *request) *answer.Error {
	var wantC, wantU bool
	switch v := q.query.Get("blocklisttype"); v {
	case "", "committed":
		wantC = true
	case "uncommitted":
		wantU = true
	case "all":
		wantC, wantU = true, true
	default:
		return answer.InvalidQueryParameter("blocklisttype", v, "")
	}
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return e
	}
	b, st := c.blobs[q.blob], c.staged[q.blob]
	if at := q.query.Get("snapshot"); at != "" {
		st = nil
		if b != nil {
			b = b.snapshotAt(at)
		}
	}
	var v view
	if st != nil {
		v.etag, v.modified = st.etag, st.modified
	}
	var out xmlBlockList
	if wantC {
		out.Committed = &xmlBlocks{}
	}
	if wantU {
		out.Uncommitted = &xmlBlocks{}
	}
	if b != nil {
		v = b.view()
		if wantC && b.kind == blockBlob {
			for _, bl := range b.blocks {
				out.Committed.Blocks = append(out.Committed.Blocks, xmlBlock{base64.StdEncoding.EncodeToString([]byte(bl.id)), bl.len})
			}
		}
	}
	if st != nil && wantU {
		for _, id := range st.order {
			out.Uncommitted.Blocks = append(out.Uncommitted.Blocks, xmlBlock{base64.StdEncoding.EncodeToString([]byte(id)), len(st.blocks[id])})
		}
	}
	c.mu.RUnlock()
	if e := cond.read(b != nil, v.etag, v.modified, v.lease); e != nil {
		return e
	}
	if b == nil && st == nil {
		return errBlobNotFound
	}
	if b != nil && !cond.tagsMet(v.tags) {
		return errConditionNotMet
	}
	if b != nil && b.kind != blockBlob {
		return errInvalidBlobType
	}
	h := q.w.Header()
	h.Set("ETag", v.etag)
	h.Set("Last-Modified", httpTime(v.modified))
	h.Set("x-ms-blob-content-length", strconv.Itoa(len(v.data)))
	return writeXMLBody(q, out)
}

// parseWrite reads the headers of a write of a whole blob (Put Blob,
// Put Block List, Put Blob From URL) in this order, the first refused
// answering: the conditions, the metadata, the content properties
// (blobProps; plain for Put Blob), the tags (x-ms-tags).
func parseWrite(h http.Header, plain bool, now func() time.Time) (conditions, metadata, contentProps, tagSet, *answer.Error) {
	cond, e := parseConditions(h, now)
	if e != nil {
		return conditions{}, nil, contentProps{}, nil, e
	}
	md, e := parseMetadata(h)
	if e != nil {
		return conditions{}, nil, contentProps{}, nil, e
	}
	props, e := blobProps(h, plain)
	if e != nil {
		return conditions{}, nil, contentProps{}, nil, e
	}
	tags, _, e := parseTagsHeader(h)
	if e != nil {
		return conditions{}, nil, contentProps{}, nil, e
	}
	return cond, md, props, tags, nil
}
