package wire

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// A successful changeset in the service's form: one part per operation,
// ETags on writes, none on a delete.
const okBatch = "--batchresponse_a1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_b2\r\n\r\n" +
	"--changesetresponse_b2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"HTTP/1.1 204 No Content\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nPreference-Applied: return-no-content\r\nDataServiceVersion: 3.0;\r\n" +
	"Location: http://127.0.0.1/devstoreaccount1/t(PartitionKey='p',RowKey='a')\r\nETag: W/\"datetime'2026-11-22T15%3A40%3A00.1Z'\"\r\n\r\n" +
	"\r\n--changesetresponse_b2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"HTTP/1.1 204 No Content\r\nX-Content-Type-Options: nosniff\r\nDataServiceVersion: 1.0;\r\n\r\n" +
	"\r\n--changesetresponse_b2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"HTTP/1.1 201 Created\r\nContent-Type: application/json;odata=minimalmetadata\r\netag: W/\"3\"\r\n\r\n" +
	`{"PartitionKey":"p","RowKey":"c","Note":"HTTP/1.1 409 Conflict"}` +
	"\r\n--changesetresponse_b2--\r\n--batchresponse_a1--\r\n"

// A failed transaction: a 202 whose changeset holds only the failing
// operation's answer, its message prefixed with the operation's index.
const failedBatch = "--batchresponse_a1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_b2\r\n\r\n" +
	"--changesetresponse_b2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"HTTP/1.1 409 Conflict\r\nContent-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n" +
	`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"2:The specified entity already exists.\nRequestId:x"}}}` +
	"\r\n--changesetresponse_b2--\r\n--batchresponse_a1--\r\n"

func TestBatchOutcome(t *testing.T) {
	results := make([]Result, 3)
	failed, ok := batchOutcome([]byte(okBatch), 3, results)
	if failed || !ok {
		t.Fatalf("batchOutcome(ok) = failed %v, ok %v", failed, ok)
	}
	want := []Result{{204, `W/"datetime'2026-11-22T15%3A40%3A00.1Z'"`}, {204, ""}, {201, `W/"3"`}}
	for i := range want {
		if results[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, results[i], want[i])
		}
	}
	// The same body with bare line feeds reads the same.
	lf := strings.ReplaceAll(okBatch, "\r\n", "\n")
	results = make([]Result, 3)
	if failed, ok := batchOutcome([]byte(lf), 3, results); failed || !ok || results[2] != want[2] || results[0] != want[0] {
		t.Errorf("LF body: failed %v ok %v results %+v", failed, ok, results)
	}
	// One response per operation, or the body is not read as success.
	if _, ok := batchOutcome([]byte(okBatch), 4, make([]Result, 4)); ok {
		t.Error("3 answers accepted for 4 operations")
	}
	if failed, ok := batchOutcome([]byte(failedBatch), 3, make([]Result, 3)); !failed || !ok {
		t.Errorf("batchOutcome(failed) = failed %v, ok %v", failed, ok)
	}
	var got innerResponse
	if n, err := readBatch([]byte(failedBatch), func(_ int, r innerResponse) { got = r }); n != 1 || err != nil || got.Status != 409 || !strings.HasPrefix(string(got.Body), `{"odata.error"`) || !strings.HasSuffix(string(got.Body), "}") {
		t.Errorf("readBatch(failed) = %d, %v, %d %q", n, err, got.Status, got.Body)
	}
}

func TestBatchOutcomeMalformed(t *testing.T) {
	for _, body := range []string{
		"",
		"--batchresponse_a1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n--batchresponse_a1--",
		strings.Replace(okBatch, "HTTP/1.1 201 Created", "HTTP/1.1 2x1 Created", 1),
		strings.Replace(okBatch, "HTTP/1.1 201 Created", "SMTP 201", 1),
		strings.Replace(okBatch, "etag: W/\"3\"", "etag W/\"3\"", 1),
		okBatch[:len(okBatch)-60],
		strings.Replace(okBatch, "boundary=changesetresponse_b2", "boundary=", 1),
	} {
		results := make([]Result, 3)
		failed, ok := batchOutcome([]byte(body), 3, results)
		if failed || ok {
			t.Errorf("malformed body read as failed %v, ok %v: %q", failed, ok, body)
		}
	}
	quoted := strings.Replace(okBatch, "boundary=changesetresponse_b2", `boundary="changesetresponse_b2"`, 1)
	if _, ok := batchOutcome([]byte(quoted), 3, make([]Result, 3)); !ok {
		t.Error("quoted boundary not read")
	}
}

// A page body of unknown length (chunked) is read whole, growing the
// buffer; a known length is read into exactly that many bytes.
func TestReadBody(t *testing.T) {
	body := strings.Repeat(`{"value":[]}`, 20000)
	for _, n := range []int64{-1, int64(len(body))} {
		buf := make([]byte, 0, 10)
		resp := &http.Response{ContentLength: n, Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))}
		got, err := readBody(resp, &buf)
		if err != nil || string(got) != body || string(buf) != body {
			t.Errorf("ContentLength %d: %d bytes, %v", n, len(got), err)
		}
	}
	resp := &http.Response{ContentLength: int64(len(body)) + 1, Body: io.NopCloser(strings.NewReader(body))}
	if _, err := readBody(resp, nil); err == nil {
		t.Error("a body shorter than its Content-Length read without error")
	}
}

// BenchmarkBatchOutcome reads the answer to a 100-operation transaction
// of upserts, in Azurite's form.
func BenchmarkBatchOutcome(b *testing.B) {
	var body strings.Builder
	body.WriteString("--batchresponse_66925d8e-2b37-4d3d-9f4f-0e8b5f5f1c2a\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1f6e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\r\n\r\n")
	for i := range 100 {
		body.WriteString("--changesetresponse_1f6e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
			"HTTP/1.1 204 No Content\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nPreference-Applied: return-no-content\r\nDataServiceVersion: 3.0;\r\n" +
			"Location: http://127.0.0.1:10002/devstoreaccount1/benchtable(PartitionKey='p1',RowKey='0000" + strconv.Itoa(1000+i) + "')\r\n" +
			"DataServiceId: http://127.0.0.1:10002/devstoreaccount1/benchtable(PartitionKey='p1',RowKey='0000" + strconv.Itoa(1000+i) + "')\r\n" +
			"ETag: W/\"datetime'2026-11-25T16%3A42%3A36.9576438Z'\"\r\n\r\n\r\n")
	}
	body.WriteString("--changesetresponse_1f6e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b--\r\n--batchresponse_66925d8e-2b37-4d3d-9f4f-0e8b5f5f1c2a--\r\n")
	raw := []byte(body.String())
	results := make([]Result, 100)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if failed, ok := batchOutcome(raw, 100, results); failed || !ok {
			b.Fatal(failed, ok)
		}
	}
}

// A delimiter counts at the beginning of a line only: inside a body's
// line it is text; at the beginning of a line before the inner
// response's body it makes the part malformed. Every cut of a body
// short of its closing delimiter reads as not one answer per operation
// (and never panics).
func TestReadBatchDelimiters(t *testing.T) {
	const head = "--batchresponse_a1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_b2\r\n\r\n"
	const part = "--changesetresponse_b2\r\nContent-Type: application/http\r\n\r\n"
	inBody := head + part + "HTTP/1.1 201 Created\r\nETag: W/\"1\"\r\n\r\n{\"Note\":\"x --changesetresponse_b2 y\"}\r\n--changesetresponse_b2--\r\n"
	var got []innerResponse
	if n, err := readBatch([]byte(inBody), func(_ int, r innerResponse) { got = append(got, r) }); n != 1 || err != nil || string(got[0].Body) != `{"Note":"x --changesetresponse_b2 y"}` || string(got[0].ETag) != `W/"1"` {
		t.Errorf("a delimiter inside a body line: %d, %v, %+v", n, err, got)
	}
	for _, bad := range []string{
		head + part + "--changesetresponse_b2\r\nHTTP/1.1 204 No Content\r\n\r\n\r\n--changesetresponse_b2--\r\n",
		head + part + "HTTP/1.1 204 No Content\r\n--changesetresponse_b2\r\n\r\n\r\n--changesetresponse_b2--\r\n",
		head + "--changesetresponse_b2\r\nContent-Type: application/http\r\n--changesetresponse_b2\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n\r\n--changesetresponse_b2--\r\n",
		head + part + "HTTP/1.1 204 No Content\r\nNoColon\r\n\r\n\r\n--changesetresponse_b2--\r\n",
		head + part + "HTTP/1.1 2x4 No Content\r\n\r\n\r\n--changesetresponse_b2--\r\n",
	} {
		if n, err := readBatch([]byte(bad), func(int, innerResponse) {}); err == nil {
			t.Errorf("%q: read %d parts, no error", bad, n)
		}
	}
	end := strings.Index(okBatch, "--changesetresponse_b2--") + len("--changesetresponse_b2--")
	for i := range len(okBatch) {
		results := make([]Result, 3)
		failed, ok := batchOutcome([]byte(okBatch[:i]), 3, results)
		if failed || ok != (i >= end) {
			t.Fatalf("okBatch cut at %d of %d: failed %v, ok %v", i, len(okBatch), failed, ok)
		}
	}
}
