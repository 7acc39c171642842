package wire

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit/internal/bufpool"
	"github.com/tablekit/tablekit/internal/errs"
)

// Query pages are read into a buffer sized by the response's
// Content-Length (azcore's own download grows one from 512 bytes, copying
// the page about twice over). Entities takes its buffers from a pool.
const (
	// pageReadAttempts bounds how often a page whose body broke off is
	// requested again. azcore retries a body download inside its retry
	// policy; a page read here skips that download, so it retries the
	// (idempotent) GET itself.
	pageReadAttempts = 3
)

// pages holds page buffers (and the 202 bodies of transactions), up to
// 4 MiB each.
var pages = &bufpool.Pool{Size: 256 << 10, Max: 4 << 20}

// bodies holds the request bodies of transactions, up to 4 MiB each.
var bodies = &bufpool.Pool{Size: 64 << 10, Max: 4 << 20}

// queryValues is the query string of one page request.
func queryValues(q Query, pos *Continuation) url.Values {
	v := url.Values{}
	if q.Filter != "" {
		v["$filter"] = []string{q.Filter}
	}
	if q.Select != "" {
		v["$select"] = []string{q.Select}
	}
	v["$top"] = []string{strconv.Itoa(int(q.Top))}
	if pos != nil {
		v["NextPartitionKey"] = []string{pos.PK}
		if pos.RK != "" {
			v["NextRowKey"] = []string{pos.RK}
		}
	}
	return v
}

// pageBody fetches one query page and returns its body, read into *buf
// (grown as needed) or, when buf is nil, into a new buffer of the body's
// size.
func (f *restPath) pageBody(ctx context.Context, q Query, pos *Continuation, buf *[]byte) ([]byte, *Continuation, error) {
	v := queryValues(q, pos)
	label := q.label(f.table)
	for attempt := 1; ; attempt++ {
		req, err := f.request(ctx, http.MethodGet, "/"+f.table+"()", v, nil, nil)
		if err != nil {
			return nil, nil, err
		}
		runtime.SkipBodyDownload(req) // error bodies are still downloaded
		resp, err := f.send(req, "query", label, http.StatusOK)
		if err != nil {
			return nil, nil, err
		}
		body, err := readBody(resp, buf)
		if err == nil {
			var next *Continuation
			if npk := resp.Header.Get("x-ms-continuation-NextPartitionKey"); npk != "" {
				next = &Continuation{PK: npk, RK: resp.Header.Get("x-ms-continuation-NextRowKey")}
			}
			return body, next, nil
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if attempt == pageReadAttempts {
			return nil, nil, errs.MapError(err, "query (reading the page)", label)
		}
	}
}

// readBody reads and closes resp's body: into exactly Content-Length
// bytes when the response says how long it is, else growing the buffer.
func readBody(resp *http.Response, buf *[]byte) ([]byte, error) {
	defer resp.Body.Close()
	var dst []byte
	if buf != nil {
		dst = (*buf)[:0]
	}
	if n := resp.ContentLength; n >= 0 {
		if int64(cap(dst)) < n {
			dst = make([]byte, n)
		} else {
			dst = dst[:n]
		}
		if _, err := io.ReadFull(resp.Body, dst); err != nil {
			return nil, err
		}
	} else {
		if cap(dst) == 0 {
			dst = make([]byte, 0, 64<<10)
		}
		for {
			if len(dst) == cap(dst) {
				// Double: append's growth of large slices (1.25x) would
				// copy a page several times over before it fits.
				dst = slices.Grow(dst, cap(dst))
			}
			m, err := resp.Body.Read(dst[len(dst):cap(dst)])
			dst = dst[:len(dst)+m]
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if buf != nil {
		*buf = dst
	}
	return dst, nil
}
