package blobs

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Blob index tags: up to maxTags key-value pairs a blob carries beside
// its metadata, set by x-ms-tags on Put Blob, Put Block List and Copy
// Blob (a write that replaces the blob replaces its tags; Copy Blob does
// not copy the source's) and by Set Blob Tags, read by Get Blob Tags, and
// counted by x-ms-tag-count in Get Blob and Get Blob Properties. Setting
// tags changes neither the blob's ETag nor its Last-Modified (REST "Set
// Blob Tags"; "Manage and find Azure Blob data with blob index tags").

// Azure's limits on a blob's tags (REST "Set Blob Tags").
const (
	maxTags        = 10
	maxTagKeyLen   = 128
	maxTagValueLen = 256
	// maxTagsBody bounds a Set Blob Tags body: ten tags of the longest
	// key and value, escaped, fit in a few KiB.
	maxTagsBody = 64 << 10
)

// Azure's refusals of a tag set. The codes and messages are Azurite's
// (src/blob/errors/StorageErrorFactory.ts), but for a character refused,
// which Azurite answers with DuplicateTagNames and the emulator with
// InvalidTag.
var (
	errTagsTooLarge      = answer.New(http.StatusBadRequest, "TagsTooLarge", "The tags specified exceed the maximum permissible limit.")
	errEmptyTagName      = answer.New(http.StatusBadRequest, "EmptyTagName", "The name of one of the tag key-value pairs is empty.")
	errDuplicateTagNames = answer.New(http.StatusBadRequest, "DuplicateTagNames", "The tags specified contain duplicate names.")
	errInvalidTag        = answer.New(http.StatusBadRequest, "InvalidTag", "The tags specified are invalid. It contains characters that are not permitted.")
)

// tagSet is a blob's tags, sorted by key; nil when it has none.
type tagSet []metaPair

// checkTags refuses a tag set outside Azure's limits, in Azurite's order:
// the count, then each tag's key (empty, too long), value (too long) and
// characters; then duplicate keys. It sorts tags.
func checkTags(tags tagSet) *answer.Error {
	if len(tags) > maxTags {
		return errTagsTooLarge
	}
	for _, t := range tags {
		switch {
		case t.name == "":
			return errEmptyTagName
		case len(t.name) > maxTagKeyLen, len(t.value) > maxTagValueLen:
			return errTagsTooLarge
		case !tagChars(t.name), !tagChars(t.value):
			return errInvalidTag
		}
	}
	slices.SortFunc(tags, func(a, b metaPair) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(tags); i++ {
		if tags[i].name == tags[i-1].name {
			return errDuplicateTagNames
		}
	}
	return nil
}

// tagChars says whether s holds only the characters a tag may: letters,
// digits, space and + - . / : = _ (REST "Set Blob Tags").
func tagChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(" +-./:=_", c) >= 0) {
			return false
		}
	}
	return true
}

// parseTagsHeader reads x-ms-tags: key=value pairs joined by &, each
// query-string encoded. ok is false when the request has no x-ms-tags
// (the blob written has no tags).
func parseTagsHeader(h http.Header) (tags tagSet, ok bool, e *answer.Error) {
	vs := h.Values("x-ms-tags")
	if len(vs) == 0 {
		return nil, false, nil
	}
	v := strings.Join(vs, "&")
	if v == "" {
		return nil, true, nil
	}
	for _, pair := range strings.Split(v, "&") {
		k, val, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil {
			return nil, true, answer.InvalidHeader("x-ms-tags", v)
		}
		tags = append(tags, metaPair{key, value})
	}
	if e := checkTags(tags); e != nil {
		return nil, true, e
	}
	return tags, true, nil
}

// xmlTags is the body of Set Blob Tags and Get Blob Tags.
type xmlTags struct {
	XMLName xml.Name `xml:"Tags"`
	TagSet  struct {
		Tags []xmlTag `xml:"Tag"`
	} `xml:"TagSet"`
}

type xmlTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

func tagsXML(tags tagSet) *xmlTags {
	x := &xmlTags{}
	x.TagSet.Tags = make([]xmlTag, len(tags))
	for i, t := range tags {
		x.TagSet.Tags[i] = xmlTag{t.name, t.value}
	}
	return x
}

// setBlobTags is Set Blob Tags: 204 once the body's tags replace the
// blob's. A lease ID, if given, must be the blob's lease; a leased blob
// takes tags without one (REST "Set Blob Tags": x-ms-lease-id "If
// specified, ... only succeeds if the blob's lease is active and matches
// this ID").
func (s *Service) setBlobTags(q *request) *answer.Error {
	ifTags, e := ifTagsCondition(q.r.Header, "x-ms-if-tags")
	if e != nil {
		return e
	}
	body, e := readBody(q, maxTagsBody)
	if e != nil {
		return e
	}
	if _, e := checkBody(q.r.Header, body); e != nil {
		return e
	}
	var x xmlTags
	if err := xml.Unmarshal(body, &x); err != nil {
		return answer.InvalidXMLDocument()
	}
	var tags tagSet
	for _, t := range x.TagSet.Tags {
		tags = append(tags, metaPair{t.Key, t.Value})
	}
	if e := checkTags(tags); e != nil {
		return e
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	b := c.blobs[q.blob]
	if b == nil {
		return errBlobNotFound
	}
	if ifTags != nil && !ifTags.match(b.tags, "") {
		// The condition is on the tags the blob has, before they are set.
		return errConditionNotMet
	}
	if e := checkLease(b.lease.current(s.cfg.Now), q.r.Header.Get("x-ms-lease-id"), false, blobLeaseErrors); e != nil {
		return e
	}
	// A blob is replaced, never changed in place: readers hold views.
	nb := *b
	nb.tags = tags
	c.blobs[q.blob] = &nb
	q.pending = s.saveBlob(c, q.blob, &nb, content{})
	h := q.w.Header()
	setCommon(h, q.r)
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// getBlobTags is Get Blob Tags: the blob's (or snapshot's) tags, an
// empty TagSet when it has none.
func (s *Service) getBlobTags(q *request) *answer.Error {
	v, e := s.readBlob(q)
	if e != nil {
		return e
	}
	return writeXMLBody(q, tagsXML(v.tags))
}

// setTagCount writes x-ms-tag-count, for a blob with tags.
func setTagCount(h http.Header, tags tagSet) {
	if len(tags) > 0 {
		h.Set("x-ms-tag-count", strconv.Itoa(len(tags)))
	}
}
