package blobs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Blob Batch (REST "Blob Batch"): POST /ACCOUNT?comp=batch and POST
// /ACCOUNT/CONTAINER?restype=container&comp=batch carry a multipart/mixed
// body of up to maxBatchRequests sub-requests, all Delete Blob or all Set
// Blob Tier, each an application/http part with its own request line and
// headers. Each sub-request is served as if sent alone, authorized on its
// own (its own Shared Key signature, or the SAS in its URL), under the
// batch's x-ms-version; the batch answers 202 with a multipart/mixed body
// holding each sub-request's answer under its Content-ID. A body the
// service cannot read, a sub-request of another operation or (for a
// container's batch) another container, more than maxBatchRequests
// sub-requests, or sub-requests of both kinds fail the whole batch with
// 400, and no sub-request is served. docs/EMULATOR.md ("Blob Batch") gives
// the evidence.

// Azure's bounds on a batch (REST "Blob Batch": "up to 256
// subrequests", "The batch request can be up to 4 MiB").
const (
	maxBatchRequests = 256
	maxBatchBody     = 4 << 20
)

// batchPerms are the SAS permissions a batch itself needs, any one of
// them: delete for Delete Blob, write for Set Blob Tier; each sub-request
// is then authorized for its own operation.
var batchPerms = []byte{'d', 'w'}

// Azure's answers refusing a whole batch. The codes and words are
// Azurite's (src/blob/handlers/BlobBatchHandler.ts).
var (
	errBatchTooLarge = answer.New(http.StatusBadRequest, "ExceedsMaxBatchRequestCount", "The batch operation exceeds maximum number of allowed subrequests.")
	errBatchMixed    = answer.New(http.StatusBadRequest, "AllBatchSubRequestsShouldBeSameApi", "All batch subrequests should be the same api.")
)

// batchPart is one sub-request of a batch, as read.
type batchPart struct {
	contentID string // the part's Content-ID, echoed in its answer
	r         *http.Request
}

// submitBatch answers Blob Batch: it reads and checks the whole body
// before serving any sub-request.
func (s *Service) submitBatch(q *request) *answer.Error {
	_, params, err := mime.ParseMediaType(q.r.Header.Get("Content-Type"))
	boundary := params["boundary"]
	if err != nil || boundary == "" {
		return answer.InvalidInput()
	}
	data, e := readBody(q, maxBatchBody)
	if e != nil {
		return e
	}
	parts, e := s.parseBatch(q, data, boundary)
	if e != nil {
		return e
	}

	var out bytes.Buffer
	mw := multipart.NewWriter(&out)
	if err := mw.SetBoundary("batchresponse_" + answer.RequestID()); err != nil {
		return answer.InternalError()
	}
	version := q.r.Header.Get("x-ms-version")
	for _, p := range parts {
		rec := &batchRecorder{header: http.Header{}}
		s.serve(rec, p.r, version)
		ph := textproto.MIMEHeader{"Content-Type": {"application/http"}}
		if p.contentID != "" {
			ph.Set("Content-ID", p.contentID)
		}
		w, err := mw.CreatePart(ph)
		if err != nil {
			return answer.InternalError()
		}
		rec.writeTo(w, version)
	}
	if err := mw.Close(); err != nil {
		return answer.InternalError()
	}
	h := q.w.Header()
	setCommon(h, q.r)
	h.Set("Content-Type", "multipart/mixed; boundary="+mw.Boundary())
	h.Set("Content-Length", strconv.Itoa(out.Len()))
	q.w.WriteHeader(http.StatusAccepted)
	q.w.Write(out.Bytes())
	return nil
}

// parseBatch reads a batch's body into its sub-requests, each ready to
// serve as a request of its own to this service.
func (s *Service) parseBatch(q *request, data []byte, boundary string) ([]batchPart, *answer.Error) {
	mr := multipart.NewReader(bytes.NewReader(data), boundary)
	var parts []batchPart
	var kind string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, answer.InvalidInput()
		}
		if len(parts) == maxBatchRequests {
			return nil, errBatchTooLarge
		}
		mt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if mt != "application/http" {
			return nil, answer.InvalidInput()
		}
		text, err := io.ReadAll(p)
		if err != nil {
			return nil, answer.InvalidInput()
		}
		// The line ending before the boundary is the boundary's, so a
		// sub-request's header block may end there without its blank
		// line (Azurite reads it so); azblob sends the blank line.
		if !bytes.HasSuffix(text, []byte("\r\n\r\n")) {
			text = append(text, "\r\n"...)
		}
		sub, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(text)))
		if err != nil {
			return nil, answer.InvalidInput()
		}
		if !strings.HasPrefix(sub.URL.Path, "/"+s.cfg.Account+"/") {
			// The Python SDK names a sub-request's blob as Azure's
			// host-style URL does, /CONTAINER/BLOB without the account
			// (Azure/Azurite#1809, which Azurite refuses), and signs
			// /ACCOUNT/CONTAINER/BLOB: the request line as sent, which
			// Shared Key reads, stays; the service reads the account's
			// path.
			sub.URL.Path = "/" + s.cfg.Account + sub.URL.Path
			if sub.URL.RawPath != "" {
				sub.URL.RawPath = "/" + s.cfg.Account + sub.URL.RawPath
			}
		}
		k, ok := s.batchKind(q, sub)
		if !ok {
			return nil, answer.InvalidInput()
		}
		if kind != "" && k != kind {
			return nil, errBatchMixed
		}
		kind = k
		// Sub-requests have no body; they reach the service as the batch
		// did: same host, same client, same connection's TLS.
		sub.Body, sub.ContentLength = http.NoBody, 0
		sub.Host, sub.RemoteAddr, sub.TLS = q.r.Host, q.r.RemoteAddr, q.r.TLS
		sub = sub.WithContext(q.r.Context())
		parts = append(parts, batchPart{contentID: strings.TrimSpace(p.Header.Get("Content-ID")), r: sub})
	}
	if len(parts) == 0 {
		return nil, answer.InvalidInput()
	}
	return parts, nil
}

// batchKind says which operation sub is, "delete" or "tier", and whether
// a batch sent as q may carry it: a blob of this account (of q's
// container, for a container's batch), deleted or given a tier.
func (s *Service) batchKind(q *request, sub *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(sub.URL.Path, "/"+s.cfg.Account+"/")
	if !ok || rest == "" {
		return "", false
	}
	container, blob, _ := strings.Cut(rest, "/")
	if blob == "" {
		container = rootContainer
	}
	if q.container != "" && container != q.container {
		return "", false
	}
	comp := sub.URL.Query().Get("comp")
	switch {
	case sub.Method == http.MethodDelete && comp == "":
		return "delete", true
	case sub.Method == http.MethodPut && comp == "tier":
		return "tier", true
	}
	return "", false
}

// batchRecorder keeps a sub-request's answer for the batch's body.
type batchRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *batchRecorder) Header() http.Header { return b.header }

func (b *batchRecorder) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *batchRecorder) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// writeTo writes the answer as an HTTP/1.1 response: status line,
// headers (x-ms-version the batch's when the sub-request was refused
// before it was given one) and body.
func (b *batchRecorder) writeTo(w io.Writer, version string) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	if b.header.Get("x-ms-version") == "" && version != "" {
		b.header.Set("x-ms-version", version)
	}
	if b.body.Len() > 0 {
		b.header.Set("Content-Length", strconv.Itoa(b.body.Len()))
	}
	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + strconv.Itoa(b.status) + " " + http.StatusText(b.status) + "\r\n")
	keys := make([]string, 0, len(b.header))
	for k := range b.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range b.header[k] {
			out.WriteString(k + ": " + v + "\r\n")
		}
	}
	out.WriteString("\r\n")
	out.Write(b.body.Bytes())
	w.Write(out.Bytes())
}
