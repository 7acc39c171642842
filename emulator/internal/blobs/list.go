package blobs

import (
	"encoding/base64"
	"encoding/xml"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/emulator/answer"
)

type xmlBlobName struct {
	Encoded bool   `xml:"Encoded,attr,omitempty"`
	Value   string `xml:",chardata"`
}

type xmlBlobProps struct {
	CreationTime       string `xml:"Creation-Time"`
	LastModified       string `xml:"Last-Modified"`
	Etag               string `xml:"Etag"`
	ContentLength      int    `xml:"Content-Length"`
	ContentType        string `xml:"Content-Type"`
	ContentEncoding    string `xml:"Content-Encoding"`
	ContentLanguage    string `xml:"Content-Language"`
	ContentCRC64       string `xml:"Content-CRC64"`
	ContentMD5         string `xml:"Content-MD5"`
	CacheControl       string `xml:"Cache-Control"`
	ContentDisposition string `xml:"Content-Disposition"`
	SequenceNumber     *int64 `xml:"x-ms-blob-sequence-number,omitempty"`
	BlobType           string `xml:"BlobType"`
	AccessTier         string `xml:"AccessTier,omitempty"`
	AccessTierInferred *bool  `xml:"AccessTierInferred,omitempty"`
	ArchiveStatus      string `xml:"ArchiveStatus,omitempty"`
	RehydratePriority  string `xml:"RehydratePriority,omitempty"`
	AccessTierChange   string `xml:"AccessTierChangeTime,omitempty"`
	LeaseStatus        string `xml:"LeaseStatus"`
	LeaseState         string `xml:"LeaseState"`
	LeaseDuration      string `xml:"LeaseDuration,omitempty"`
	CopyID             string `xml:"CopyId,omitempty"`
	CopyStatus         string `xml:"CopyStatus,omitempty"`
	CopySource         string `xml:"CopySource,omitempty"`
	CopyProgress       string `xml:"CopyProgress,omitempty"`
	CopyCompletionTime string `xml:"CopyCompletionTime,omitempty"`
	ServerEncrypted    bool   `xml:"ServerEncrypted"`
	Sealed             *bool  `xml:"Sealed,omitempty"`
	TagCount           int    `xml:"TagCount,omitempty"`
}

type xmlBlob struct {
	XMLName    xml.Name     `xml:"Blob"`
	Name       xmlBlobName  `xml:"Name"`
	Snapshot   string       `xml:"Snapshot,omitempty"`
	Properties xmlBlobProps `xml:"Properties"`
	Metadata   *xmlMetadata `xml:"Metadata,omitempty"`
	Tags       *xmlTags     `xml:"Tags,omitempty"`
}

type xmlBlobPrefix struct {
	XMLName xml.Name    `xml:"BlobPrefix"`
	Name    xmlBlobName `xml:"Name"`
}

type xmlBlobList struct {
	XMLName         xml.Name `xml:"EnumerationResults"`
	ServiceEndpoint string   `xml:"ServiceEndpoint,attr"`
	ContainerName   string   `xml:"ContainerName,attr"`
	Prefix          *string  `xml:"Prefix,omitempty"`
	Marker          *string  `xml:"Marker,omitempty"`
	MaxResults      *int     `xml:"MaxResults,omitempty"`
	Delimiter       *string  `xml:"Delimiter,omitempty"`
	Blobs           struct {
		Items []any // xmlBlob and xmlBlobPrefix, in name order
	} `xml:"Blobs"`
	NextMarker string `xml:"NextMarker"`
}

// The include values List Blobs accepts. Those the emulator has nothing
// for (no versions or soft-deleted blobs exist in it) list nothing more;
// uncommittedblobs is not emulated.
var blobIncludes = []string{"metadata", "snapshots", "uncommittedblobs", "copy", "deleted", "tags",
	"versions", "deletedwithversions", "immutabilitypolicy", "legalhold", "permissions"}

// listBlobs is List Blobs: the committed blobs whose names start with
// prefix, in name order from the marker; with a delimiter, the names
// that go on past it after the prefix come as one BlobPrefix each. A
// page holds at most maxresults entries (blobs and prefixes); NextMarker
// says where the next one starts.
func (s *Service) listBlobs(q *request) *answer.Error {
	p, e := parseList(q, blobIncludes)
	if e != nil {
		return e
	}
	for _, inc := range q.query["include"] {
		if strings.Contains(strings.ToLower(inc), "uncommittedblobs") {
			return errNotImplemented("include=uncommittedblobs")
		}
	}
	out := xmlBlobList{ServiceEndpoint: serviceEndpoint(q.r, s.cfg.Account), ContainerName: q.container}
	echoListParams(q, &out.Prefix, &out.Marker, &out.MaxResults, p)
	if q.query.Has("delimiter") {
		out.Delimiter = &p.delimiter
	}
	start, startSnap, _ := strings.Cut(decodeMarker(p.marker), markerSnapshot)
	start = max(start, p.prefix)
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return e
	}
	names := c.names
	i, _ := slices.BinarySearch(names, start)
	out.Blobs.Items = []any{}
	for i < len(names) {
		name := names[i]
		if !strings.HasPrefix(name, p.prefix) {
			break
		}
		if len(out.Blobs.Items) == p.max {
			out.NextMarker = encodeMarker(name)
			break
		}
		if p.delimiter != "" {
			if j := strings.Index(name[len(p.prefix):], p.delimiter); j >= 0 {
				bp := name[:len(p.prefix)+j+len(p.delimiter)]
				out.Blobs.Items = append(out.Blobs.Items, xmlBlobPrefix{Name: blobNameXML(bp)})
				i += sort.Search(len(names)-i, func(k int) bool { return !strings.HasPrefix(names[i+k], bp) })
				continue
			}
		}
		b := c.blobs[name]
		full := false
		if p.snapshots {
			// A blob's snapshots come before it, oldest first (List Blobs
			// reference). A page may end among them: the marker then
			// names the snapshot the next page starts at.
			for _, sn := range b.snapshots {
				if name == start && startSnap != "" && sn.at < startSnap {
					continue
				}
				if len(out.Blobs.Items) == p.max {
					out.NextMarker, full = encodeMarker(name+markerSnapshot+sn.at), true
					break
				}
				x := blobXML(name, sn.b, p, s.cfg.Now)
				x.Snapshot = sn.at
				out.Blobs.Items = append(out.Blobs.Items, x)
			}
			if !full && len(out.Blobs.Items) == p.max {
				out.NextMarker, full = encodeMarker(name+markerSnapshot+markerBase), true
			}
		}
		if full {
			break
		}
		out.Blobs.Items = append(out.Blobs.Items, blobXML(name, b, p, s.cfg.Now))
		i++
	}
	c.mu.RUnlock()
	return writeXMLBody(q, out)
}

// blobXML is one blob as a listing shows it. The ETag is unquoted there.
func blobXML(name string, b *blob, p listParams, now func() time.Time) xmlBlob {
	x := xmlBlob{Name: blobNameXML(name)}
	pr := &x.Properties
	pr.CreationTime = httpTime(b.created)
	pr.LastModified = httpTime(b.modified)
	pr.Etag = strings.Trim(b.etag, `"`)
	pr.ContentLength = int(b.size())
	pr.ContentType = b.props.contentType
	pr.ContentEncoding = b.props.contentEncoding
	pr.ContentLanguage = b.props.contentLanguage
	pr.CacheControl = b.props.cacheControl
	pr.ContentDisposition = b.props.contentDisposition
	if b.props.contentMD5 != nil {
		pr.ContentMD5 = base64.StdEncoding.EncodeToString(b.props.contentMD5)
	}
	pr.BlobType = b.kind.String()
	if b.kind == blockBlob {
		t := b.tiering.current(now)
		pr.AccessTier = t.name()
		if t.tier == "" {
			inferred := true
			pr.AccessTierInferred = &inferred
		}
		if !t.changed.IsZero() {
			pr.AccessTierChange = httpTime(t.changed)
		}
		if st := t.archiveStatus(); st != "" {
			pr.ArchiveStatus, pr.RehydratePriority = st, t.priority
		}
	} else if b.kind == pageBlob {
		pr.SequenceNumber = &b.page.seq
	} else {
		// Listings show Sealed for every append blob (List Blobs
		// reference), where Get Blob Properties leaves it out until the
		// blob is sealed.
		sealed := b.sealed
		pr.Sealed = &sealed
	}
	l := b.lease.current(now)
	pr.LeaseStatus, pr.LeaseState, pr.LeaseDuration = l.status(), l.state.String(), l.duration()
	pr.ServerEncrypted = true
	if p.copy && b.copy.id != "" {
		pr.CopyID, pr.CopyStatus, pr.CopySource, pr.CopyProgress = b.copy.id, b.copy.status, b.copy.source, b.copy.progress
		pr.CopyCompletionTime = httpTime(b.copy.completed)
	}
	if p.metadata {
		md := xmlMetadata(b.meta)
		x.Metadata = &md
	}
	pr.TagCount = len(b.tags)
	if p.tags && len(b.tags) > 0 {
		x.Tags = tagsXML(b.tags)
	}
	return x
}

// blobNameXML writes a name as listings do: as it is, or percent-encoded
// with Encoded="true" when it holds characters XML cannot carry.
func blobNameXML(name string) xmlBlobName {
	for _, r := range name {
		if r == utf8.RuneError || !xmlChar(r) {
			return xmlBlobName{Encoded: true, Value: url.QueryEscape(name)}
		}
	}
	return xmlBlobName{Value: name}
}

// xmlChar says whether XML 1.0 allows r.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// A marker is opaque to clients, as Azure's are: "2!" then the length
// and the base64 of the name the next page starts at, followed, when the
// page ends among the blob's snapshots (include=snapshots), by
// markerSnapshot and the snapshot's name, or markerBase for the blob
// itself.
const (
	markerSnapshot = "\x00"
	// markerBase sorts after every snapshot name (which start with a
	// digit).
	markerBase = "~"
)

func encodeMarker(name string) string {
	b := base64.StdEncoding.EncodeToString([]byte(name))
	return "2!" + strconv.Itoa(len(b)) + "!" + b
}

// decodeMarker returns the name a marker starts at. A marker not in the
// service's form is taken as a name.
func decodeMarker(m string) string {
	rest, ok := strings.CutPrefix(m, "2!")
	if !ok {
		return m
	}
	n, b, ok := strings.Cut(rest, "!")
	if !ok || n != strconv.Itoa(len(b)) {
		return m
	}
	raw, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		return m
	}
	return string(raw)
}
