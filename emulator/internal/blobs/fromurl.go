package blobs

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// Copies whose source is a URL: Copy Blob and Copy Blob From URL
// (copy.go), Put Blob From URL and Put Block From URL (here). The source
// may be a blob of this account or of another account the same emulator
// serves (Config.Peers), as a copy between two accounts of one Azure
// region reads it; the emulator fetches nothing from outside. Who may
// read the source is Azure's rule (authorizeSource).

// peer returns the Blob service of the account named account served
// beside this one (its -secondary endpoint included), or nil.
func (s *Service) peer(account string) *Service {
	account = strings.TrimSuffix(account, secondarySuffix)
	if account == s.cfg.Account {
		return s
	}
	if s.cfg.Peers == nil {
		return nil
	}
	return s.cfg.Peers(account)
}

// cannotVerifyCopySource is Azure's answer to a copy whose source the
// request may not read.
func cannotVerifyCopySource(status int, msg string) *answer.Error {
	return answer.New(status, "CannotVerifyCopySource", msg)
}

// authorizeSource checks that the request may read the copy's source, a
// blob of from's account: synchronous says the copy reads it while the
// request waits (Copy Blob From URL, Put Blob From URL, Put Block From
// URL). Azure's rules:
//
//   - a SAS on the source URL is checked by the source's account as a
//     read of the source (refused: 403 CannotVerifyCopySource with the
//     refusal's message);
//   - x-ms-copy-source-authorization (synchronous copies; only the Bearer
//     scheme) is checked by the source's account as a bearer token;
//   - a source in a public container needs neither;
//   - an asynchronous Copy Blob within the account reads its source with
//     the request's own Shared Key or bearer token (REST "Copy Blob");
//     a synchronous copy does not, even within the account (REST "Copy
//     Blob From URL", "Put Blob From URL": "The source blob must either be
//     public or be authorized via a shared access signature"; the
//     maintainers in Azure/azure-sdk-for-python issue 36176, 2024, and
//     Azure/azure-sdk-for-net issue 32028, 2022, confirm it against real
//     accounts).
//
// Otherwise a synchronous copy is 401 CannotVerifyCopySource "Server
// failed to authenticate the request. Please refer to the information in
// the www-authenticate header." (the real answer in azure-sdk-for-net
// 32028; 404 "The specified resource does not exist." before version
// 2019-12-12, as recorded in Azure/azure-storage-python issue 604, 2019),
// and an asynchronous one 404 CannotVerifyCopySource "The specified
// resource does not exist." (real answers to copies from another
// account's private container: hashicorp/terraform-provider-azurerm 676,
// Azure/azure-powershell 12287, Azure/azure-sdk-for-js 13370).
func (s *Service) authorizeSource(q *request, from *Service, u *url.URL, src copySource, synchronous bool) *answer.Error {
	bearer := q.r.Header.Get("x-ms-copy-source-authorization")
	if bearer != "" && !synchronous {
		return errNotImplemented("x-ms-copy-source-authorization on Copy Blob (it is served on Copy Blob From URL, Put Blob From URL and Put Block From URL)")
	}
	if from.cfg.Auth == nil {
		return nil
	}
	read := auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'r', Name: src.container, Blob: src.blob}
	switch {
	case u.Query().Has("sig"):
		r, err := http.NewRequest(http.MethodGet, u.String(), nil)
		if err != nil {
			return cannotVerifyCopySource(http.StatusForbidden, "The copy source URL cannot be read.")
		}
		if u.Scheme == "https" {
			r.TLS = q.r.TLS // read as the emulator serves it: an https-only SAS holds
		}
		if _, e := from.cfg.Auth.Authorize(r, read); e != nil {
			return cannotVerifyCopySource(http.StatusForbidden, e.Message)
		}
		return nil
	case bearer != "":
		if !strings.HasPrefix(bearer, "Bearer ") {
			// "Only the scheme bearer is supported" (REST "Put Blob From
			// URL", x-ms-copy-source-authorization).
			return answer.InvalidHeader("x-ms-copy-source-authorization", strings.Fields(bearer + " x")[0])
		}
		r := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{"Authorization": {bearer}}, TLS: q.r.TLS}
		if g, e := from.cfg.Auth.Authorize(r, read); e != nil || !g.Bearer {
			msg := "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."
			if e != nil {
				msg = e.Message
			}
			return cannotVerifyCopySource(http.StatusUnauthorized, msg)
		}
		return nil
	}
	if c := from.container(src.container); c != nil {
		c.mu.RLock()
		access := c.access
		c.mu.RUnlock()
		if access != "" {
			return nil
		}
	}
	if !synchronous && from == s && len(q.r.Header["Authorization"]) > 0 {
		return nil
	}
	if synchronous && apiVersionAtLeast(q.r, "2019-12-12") {
		return cannotVerifyCopySource(http.StatusUnauthorized, "Server failed to authenticate the request. Please refer to the information in the www-authenticate header.")
	}
	return cannotVerifyCopySource(http.StatusNotFound, "The specified resource does not exist.")
}

// readSource finds the source x-ms-copy-source names, checks the
// x-ms-source-if-* conditions and that q may read it, and copies it out
// (readCopySource): a synchronous copy's first half.
func (s *Service) readSource(q *request) (view, *answer.Error) {
	h := q.r.Header
	from, src, u, e := s.parseCopySource(h.Get("x-ms-copy-source"))
	if e != nil {
		return view{}, e
	}
	scond, e := parseSourceConditions(h, s.cfg.Now)
	if e != nil {
		return view{}, e
	}
	return s.readCopySource(q, from, u, src, scond, true)
}

// readCopySource checks that q may read src, a blob of from named by u
// (authorizeSource; synchronous as there), and copies it out if it meets
// scond: a missing source is 404 BlobNotFound (Azurite's answer to Copy
// Blob), one that fails scond 412 SourceConditionNotMet, an archived one
// 409 BlobArchived (Azure copies an archived blob only into an online
// tier, with x-ms-access-tier on Copy Blob, which the emulator does not
// serve; Azurite refuses the rest so).
func (s *Service) readCopySource(q *request, from *Service, u *url.URL, src copySource, scond conditions, synchronous bool) (view, *answer.Error) {
	if e := s.authorizeSource(q, from, u, src, synchronous); e != nil {
		return view{}, e
	}
	sc, e := from.rlockContainer(src.container)
	if e != nil {
		return view{}, e
	}
	sb := sc.blobs[src.blob]
	if sb != nil && src.snapshot != "" {
		sb = sb.snapshotAt(src.snapshot)
	}
	var v view
	if sb != nil {
		v = sb.view()
	}
	sc.mu.RUnlock()
	if sb == nil {
		return view{}, errBlobNotFound
	}
	if scond.readConditions(true, v.etag, v.modified) != nil || !scond.tagsMet(v.tags) {
		return view{}, errSourceConditionNotMet
	}
	if v.tiering.current(from.cfg.Now).archived() {
		return view{}, errBlobArchived
	}
	return v, nil
}

// sourceSums checks data, read from a copy's source, against
// x-ms-source-content-md5 and x-ms-source-content-crc64, as Put Block
// checks its body against Content-MD5 and x-ms-content-crc64 ("If the two
// hashes don't match, the operation fails with error code 400", REST "Put
// Block From URL"; Md5Mismatch and Crc64Mismatch are Put Block's codes).
func sourceSums(h http.Header, data []byte) (checksums, *answer.Error) {
	sh := http.Header{}
	if v := h.Get("x-ms-source-content-md5"); v != "" {
		sh.Set("Content-MD5", v)
	}
	if v := h.Get("x-ms-source-content-crc64"); v != "" {
		sh.Set("x-ms-content-crc64", v)
	}
	return checkBody(sh, data)
}

// putBlobFromURL is Put Blob From URL (from version 2020-04-08): Put Blob
// of a block blob whose content is read from x-ms-copy-source, 201. The
// new blob takes the request's content headers and metadata; with
// x-ms-copy-source-blob-properties true (the default) a content header
// the request does not set is the source's, with false it is Put Blob's
// default (REST "Put Blob From URL"). The source may be a blob of any
// type; its metadata and tags are not copied. Uncommitted blocks are
// dropped, as by Put Blob.
func (s *Service) putBlobFromURL(q *request) *answer.Error {
	h := q.r.Header
	if v := h.Get("x-ms-blob-type"); v != "BlockBlob" {
		return answer.InvalidHeader("x-ms-blob-type", v)
	}
	if e := requireNoBody(q); e != nil {
		return e
	}
	cond, md, props, tags, e := parseWrite(h, false, s.cfg.Now)
	if e != nil {
		return e
	}
	copyProps := true
	switch v := h.Get("x-ms-copy-source-blob-properties"); strings.ToLower(v) {
	case "", "true":
	case "false":
		copyProps = false
	default:
		return answer.InvalidHeader("x-ms-copy-source-blob-properties", v)
	}
	v, e := s.readSource(q)
	if e != nil {
		return e
	}
	if v.size() > maxPutBlob {
		// A source larger than Put Blob takes (5,000 MiB, REST "Put Blob
		// From URL"); Azure's answer is not recorded (weak).
		return answer.RequestBodyTooLarge()
	}
	data := sourceBytes(v, 0, v.size()-1)
	sums, e := sourceSums(h, data)
	if e != nil {
		return e
	}
	if copyProps {
		props = sourceProps(h, props, v.props)
	}
	if props.contentMD5 == nil {
		props.contentMD5 = sums.contentMD5()
	}
	c, old, e := s.lockReplaceable(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	now, etag := s.clock.next()
	created := now
	if old != nil {
		created = old.created
	}
	// The whole content is one committed block, as after Put Blob.
	rh := s.replaceBlob(q, c, &blob{kind: blockBlob, data: data, meta: md, tags: tags, props: props, etag: etag, modified: now, created: created})
	sums.setWhole(rh)
	return answerCreated(q)
}

// sourceProps is a Put Blob From URL's content headers: the request's
// x-ms-blob-content-* where it sets them, the source's otherwise.
func sourceProps(h http.Header, mine, src contentProps) contentProps {
	p := src
	p.contentMD5 = nil
	for _, f := range []struct {
		header string
		to     *string
		from   string
	}{
		{"x-ms-blob-content-type", &p.contentType, mine.contentType},
		{"x-ms-blob-content-encoding", &p.contentEncoding, mine.contentEncoding},
		{"x-ms-blob-content-language", &p.contentLanguage, mine.contentLanguage},
		{"x-ms-blob-content-disposition", &p.contentDisposition, mine.contentDisposition},
		{"x-ms-blob-cache-control", &p.cacheControl, mine.cacheControl},
	} {
		if h.Get(f.header) != "" {
			*f.to = f.from
		}
	}
	if p.contentType == "" {
		p.contentType = "application/octet-stream"
	}
	if mine.contentMD5 != nil {
		p.contentMD5 = mine.contentMD5
	}
	return p
}

// putBlockFromURL is Put Block From URL: Put Block whose content is the
// source's bytes in x-ms-source-range (bytes=START-END, END inclusive, or
// bytes=START-; the whole source without it), 201. A range that starts
// at or past the source's end is 416 CannotVerifyCopySource with Get
// Blob's message (the source's answer, passed on as Azure passes on a
// source's refusals; weak).
func (s *Service) putBlockFromURL(q *request) *answer.Error {
	id, e := blockID(q)
	if e != nil {
		return e
	}
	if e := requireNoBody(q); e != nil {
		return e
	}
	var start, end int64
	ranged := false
	if rv := q.r.Header.Get("x-ms-source-range"); rv != "" {
		if start, end, ranged = parseRange(http.Header{"X-Ms-Range": {rv}}); !ranged {
			return answer.InvalidHeader("x-ms-source-range", rv)
		}
	}
	v, e := s.readSource(q)
	if e != nil {
		return e
	}
	size := v.size()
	if !ranged {
		start, end = 0, size-1
	} else if start >= size {
		return cannotVerifyCopySource(http.StatusRequestedRangeNotSatisfiable, errInvalidRange.Message)
	}
	end = min(end, size-1)
	if end-start+1 > maxPutBlock {
		// A block larger than Put Block takes (4,000 MiB); Azure's
		// answer is not recorded (weak).
		return answer.RequestBodyTooLarge()
	}
	data := sourceBytes(v, start, end)
	sums, e := sourceSums(q.r.Header, data)
	if e != nil {
		return e
	}
	return s.stageBlock(q, id, data, sums)
}

// sourceBytes is bytes [start, end] of the source v (none when end <
// start): a block or append blob's own bytes, a page blob's written out.
func sourceBytes(v view, start, end int64) []byte {
	if end < start {
		return nil
	}
	if v.kind != pageBlob {
		return v.data[start : end+1]
	}
	var b bytes.Buffer
	b.Grow(int(end - start + 1))
	v.writeBody(&b, start, end)
	return b.Bytes()
}
