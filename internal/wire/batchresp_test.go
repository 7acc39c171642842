package wire

import (
	"io"
	"net/http"
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
