package patterns_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tablehttp"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The ceiling: a minimal client that sends pre-encoded requests, signed
// once (Shared Key Lite signs the date and the path, not the query), over
// net/http alone, and decodes nothing: it checks the status and counts
// rows. What it reaches stands in for what Azurite can serve; tablekit's
// wall time and client CPU are reported against it.

type cpuMeter struct{ m benchutil.CPUMeter }

func startCPU() cpuMeter { return cpuMeter{benchutil.StartCPU()} }

// report records the client CPU per entity over the b.N operations of
// entities each.
func (m cpuMeter) report(b *testing.B, entities int) { m.m.Report(b, entities, "entity") }

// ceiling is the minimal client.
type ceiling struct {
	client   *http.Client
	endpoint string // the table service URL
	account  string
	key      []byte
}

func newCeiling(b *testing.B) *ceiling {
	b.Helper()
	settings := map[string]string{}
	for _, kv := range strings.Split(testenv.ConnectionString(b), ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			settings[k] = v
		}
	}
	key, err := base64.StdEncoding.DecodeString(settings["AccountKey"])
	if err != nil || settings["AccountName"] == "" {
		b.Fatalf("the ceiling needs AccountName and AccountKey in the test connection string")
	}
	endpoint := testenv.Account(b).TableEndpoint()
	return &ceiling{
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		endpoint: strings.TrimSuffix(endpoint, "/"),
		account:  settings["AccountName"],
		key:      key,
	}
}

// signed returns the headers of requests to path, signed now.
func (c *ceiling) signed(path string) http.Header {
	u, _ := url.Parse(c.endpoint + path)
	date := time.Now().UTC().Format(http.TimeFormat)
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(tablehttp.StringToSign(c.account, date, u)))
	return http.Header{
		"X-Ms-Date":             {date},
		"Authorization":         {"SharedKeyLite " + c.account + ":" + base64.StdEncoding.EncodeToString(m.Sum(nil))},
		"X-Ms-Version":          {tablekit.TableServiceVersion},
		"Dataserviceversion":    {"3.0"},
		"Maxdataserviceversion": {"3.0;NetFx"},
		"Accept":                {"application/json;odata=minimalmetadata"},
	}
}

// send sends one pre-encoded request and hands its body, read whole into
// a reused buffer (valid only during use), to use.
func (c *ceiling) send(ctx context.Context, method, rawURL string, header http.Header, body []byte, want int, use func(resp *http.Response, body []byte) error) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := ceilingBuffers.Get().(*bytes.Buffer)
	defer ceilingBuffers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != want {
		return &ceilingError{resp.StatusCode, want}
	}
	return use(resp, buf.Bytes())
}

// ceilingBuffers are the ceiling's response buffers: it reads a body into
// memory it already has, as a client tuned for one job would.
var ceilingBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

type ceilingError struct{ got, want int }

func (e *ceilingError) Error() string {
	return "ceiling: status " + strconv.Itoa(e.got) + ", want " + strconv.Itoa(e.want)
}

// scan reads every page of a partition scan and counts the rows (one
// "odata.etag" per row in minimal metadata).
func (c *ceiling) scan(ctx context.Context, table, filter string, header http.Header) (int, error) {
	base := c.endpoint + "/" + table + "()?$filter=" + url.QueryEscape(filter) + "&$top=1000"
	next := ""
	n := 0
	for {
		var resp *http.Response
		err := c.send(ctx, http.MethodGet, base+next, header, nil, http.StatusOK, func(r *http.Response, body []byte) error {
			resp = r
			n += bytes.Count(body, []byte(`"odata.etag":`))
			return nil
		})
		if err != nil {
			return n, err
		}
		npk := resp.Header.Get("x-ms-continuation-NextPartitionKey")
		if npk == "" {
			return n, nil
		}
		next = "&NextPartitionKey=" + url.QueryEscape(npk)
		if nrk := resp.Header.Get("x-ms-continuation-NextRowKey"); nrk != "" {
			next += "&NextRowKey=" + url.QueryEscape(nrk)
		}
	}
}

// batchBody is one pre-encoded entity group transaction of upserts
// (InsertOrReplace), the multipart form the REST specification gives.
func (c *ceiling) batchBody(table string, entities [][]byte, keys [][2]string) (body []byte, contentType string) {
	batch, cs := "batch_ceiling", "changeset_ceiling"
	var w bytes.Buffer
	w.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + cs + "\r\n\r\n")
	for i, e := range entities {
		w.WriteString("--" + cs + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		w.WriteString("PUT " + c.endpoint + "/" + table + "(PartitionKey='" + url.PathEscape(keys[i][0]) + "',RowKey='" + url.PathEscape(keys[i][1]) + "') HTTP/1.1\r\n")
		w.WriteString("Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\nContent-Type: application/json\r\n\r\n")
		w.Write(e)
		w.WriteString("\r\n")
	}
	w.WriteString("--" + cs + "--\r\n--" + batch + "--\r\n")
	return w.Bytes(), "multipart/mixed; boundary=" + batch
}

// sendBatches sends pre-encoded batch bodies, conc at a time.
func (c *ceiling) sendBatches(ctx context.Context, bodies [][]byte, header http.Header, conc int) error {
	work := make(chan []byte)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range work {
				err := c.send(ctx, http.MethodPost, c.endpoint+"/$batch", header, body, http.StatusAccepted, func(_ *http.Response, resp []byte) error {
					if bytes.Contains(resp, []byte("HTTP/1.1 4")) {
						return &ceilingError{400, 202}
					}
					return nil
				})
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, body := range bodies {
		work <- body
	}
	close(work)
	wg.Wait()
	return first
}
