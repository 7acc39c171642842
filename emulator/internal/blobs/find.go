package blobs

import (
	"encoding/xml"
	"net/http"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Find Blobs by Tags (REST "Find Blobs by Tags", "Find Blobs by Tags in
// Container"), and the x-ms-if-tags and x-ms-source-if-tags conditions
// (REST "Specifying conditional headers for Blob service operations"),
// both on the filter grammar of tagfilter.go.

// xmlFoundBlob is one blob Find Blobs by Tags answers with.
type xmlFoundBlob struct {
	XMLName       xml.Name    `xml:"Blob"`
	Name          xmlBlobName `xml:"Name"`
	ContainerName string      `xml:"ContainerName"`
	Tags          *xmlTags    `xml:"Tags,omitempty"`
}

// xmlFindResult is Find Blobs by Tags' answer, its elements in the order
// a real account writes them (the Azure SDK for Python's recordings
// test_blob_tags test_filter_blobs, versions 2019-12-12 and 2021-08-06).
type xmlFindResult struct {
	XMLName         xml.Name `xml:"EnumerationResults"`
	ServiceEndpoint string   `xml:"ServiceEndpoint,attr"`
	Marker          *string  `xml:"Marker,omitempty"`
	Where           string   `xml:"Where"`
	MaxResults      *int     `xml:"MaxResults,omitempty"`
	Blobs           struct {
		Items []xmlFoundBlob
	} `xml:"Blobs"`
	NextMarker string `xml:"NextMarker"`
}

// findIncludes are the include values Find Blobs by Tags takes; the
// emulator keeps no versions, so versions adds nothing.
var findIncludes = []string{"none", "versions"}

// findBlobs is Find Blobs by Tags: on the account (GET ?comp=blobs) the
// blobs of every container, on a container (GET
// ?restype=container&comp=blobs, from version 2021-04-10) its blobs, whose
// tags meet where=, in the order of their container's name and then
// their own, each with its tags of the keys the expression compares. A
// page holds at most maxresults (5000 at most); NextMarker names the next
// blob found. Snapshots and uncommitted blobs are not searched, nor are
// blobs without tags (a blob enters Azure's index by its tags). Azure's
// index is eventually consistent; the emulator's is the blobs as they
// are.
func (s *Service) findBlobs(q *request) *answer.Error {
	use := findInAccount
	if q.container != "" {
		use = findInContainer
		if v := q.r.Header.Get("x-ms-version"); v != "" && v < "2021-04-10" {
			return answer.InvalidQueryParameter("comp", q.comp, "")
		}
	}
	where, ok := q.query["where"]
	if !ok {
		return answer.MissingQueryParameter("where")
	}
	f, e := parseTagFilter(where[0], use, "where")
	if e != nil {
		return e
	}
	p, e := parseList(q, findIncludes)
	if e != nil {
		return e
	}
	out := xmlFindResult{ServiceEndpoint: serviceEndpoint(q.r, s.cfg.Account) + "/", Where: where[0]}
	var noPrefix *string
	echoListParams(q, &noPrefix, &out.Marker, &out.MaxResults, p)
	// A marker names the container and the blob the next page starts at;
	// one not in the service's form is taken as such a name.
	startC, startB, _ := strings.Cut(decodeMarker(p.marker), "/")

	s.mu.RLock()
	var cs []*container
	if use == findInContainer {
		if c := s.containers[q.container]; c != nil {
			cs = append(cs, c)
		}
	} else {
		i, _ := slices.BinarySearch(s.names, startC)
		for _, name := range s.names[i:] {
			if f.containerMay(name) {
				cs = append(cs, s.containers[name])
			}
		}
	}
	s.mu.RUnlock()
	if use == findInContainer && cs == nil {
		return errContainerNotFound
	}

	out.Blobs.Items = []xmlFoundBlob{}
	for _, c := range cs {
		if full := s.findIn(c, f, startC, startB, p.max, &out); full {
			break
		}
	}
	return writeXMLBody(q, out)
}

// findIn adds to out the blobs of c that meet f, from the marker's blob
// when c is the marker's container (startC) and not before it, until out
// holds max; then it sets NextMarker at the next blob found and answers
// true.
func (s *Service) findIn(c *container, f *tagFilter, startC, startB string, max int, out *xmlFindResult) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.deleted || c.name < startC {
		return false
	}
	i := 0
	if c.name == startC {
		i, _ = slices.BinarySearch(c.names, startB)
	}
	for _, name := range c.names[i:] {
		b := c.blobs[name]
		if len(b.tags) == 0 || !f.match(b.tags, c.name) {
			continue
		}
		if len(out.Blobs.Items) == max {
			out.NextMarker = encodeMarker(c.name + "/" + name)
			return true
		}
		x := xmlFoundBlob{Name: blobNameXML(name), ContainerName: c.name}
		if tags := f.of(b.tags); len(tags) > 0 {
			x.Tags = tagsXML(tags)
		}
		out.Blobs.Items = append(out.Blobs.Items, x)
	}
	return false
}

// tagsMet says whether a blob with tags meets the request's x-ms-if-tags
// (true without one). A blob that does not exist is not tested: the
// operation answers for it (404, or Put Block List's 412).
func (c conditions) tagsMet(tags tagSet) bool {
	return c.ifTags == nil || c.ifTags.match(tags, "")
}

// ifTagsServed says whether q is an operation the service applies
// x-ms-if-tags to: those that take it in Azure's REST API (blob-storage
// swagger's IfTags parameter, 2021-10-04) and that the emulator serves:
// Get Blob, Get Blob Properties, Get Blob Metadata, Delete Blob, Put Blob,
// Copy Blob, Copy Blob From URL, Set Blob Properties, Set Blob Metadata,
// Lease Blob, Snapshot Blob, Set Blob Tier, Put Block List, Get Block
// List, Append Block, Get Blob Tags, Set Blob Tags, Put Page and Get Page
// Ranges (their blob must meet it, as for the others). Put Block, Seal,
// Abort Copy and the container's operations do not take it.
func ifTagsServed(q *request) bool {
	if q.blob == "" {
		return false
	}
	m := q.r.Method
	read := m == http.MethodGet || m == http.MethodHead
	switch q.comp {
	case "":
		return read || m == http.MethodDelete || m == http.MethodPut
	case "metadata":
		return read || m == http.MethodPut
	case "blocklist", "tags":
		return m == http.MethodGet || m == http.MethodPut
	case "properties", "lease", "snapshot", "tier", "appendblock", "page":
		return m == http.MethodPut
	case "pagelist":
		return m == http.MethodGet
	}
	return false
}

// sourceIfTagsServed says whether q is Copy Blob or Put Blob From URL,
// the operations the emulator serves that take x-ms-source-if-tags (Copy
// Blob From URL and Put Block From URL do not: azblob's generated
// requests send it on Start Copy From URL and Put Blob From URL alone).
func sourceIfTagsServed(q *request) bool {
	h := q.r.Header
	return q.blob != "" && q.r.Method == http.MethodPut && q.comp == "" && h.Get("x-ms-copy-source") != "" &&
		!strings.EqualFold(h.Get("x-ms-requires-sync"), "true")
}
