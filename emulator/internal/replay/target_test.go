package replay

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestRequestRewrite(t *testing.T) {
	mem := newMemory()
	mem.remember(`W/"datetime'2024-02-26T20%3A23%3A51.0462365Z'"`, `W/"datetime'2026-01-01T00%3A00%3A00.0000001Z'"`)
	mem.remember("1!12!Y29udFRva2Vu", "1!8!YWJjZA--")
	mem.remember("6e0687d7-ada1-4969-9f2f-a911fb023f18", "11111111-2222-3333-4444-555555555555")
	mem.remember("AgAAAAMAAAAAAAAANAqn16882QE=", "cG9w")
	tests := []struct {
		name    string
		e       Entry
		url     string
		headers map[string]string
	}{
		{
			name: "entity delete with a remembered ETag",
			e: Entry{RequestMethod: "DELETE", RequestURI: "https://fakeaccount.table.core.windows.net/t1(PartitionKey='p',RowKey='2')",
				RequestHeaders: map[string]string{"If-Match": `W/"datetime'2024-02-26T20%3A23%3A51.0462365Z'"`, "Authorization": "Sanitized", "DataServiceVersion": "3.0", "x-ms-version": "2019-02-02"}},
			url:     "http://127.0.0.1:1/acct/t1(PartitionKey='p',RowKey='2')",
			headers: map[string]string{"If-Match": `W/"datetime'2026-01-01T00%3A00%3A00.0000001Z'"`, "Dataserviceversion": "3.0"},
		},
		{
			name:    "a query resumed from a remembered continuation",
			e:       Entry{RequestMethod: "GET", RequestURI: "https://fakeaccount.table.core.windows.net/t1()?NextPartitionKey=1%2112%21Y29udFRva2Vu&NextRowKey=1%214%21MQ--", RequestHeaders: map[string]string{"x-ms-version": "2019-02-02"}},
			url:     "http://127.0.0.1:1/acct/t1()?NextPartitionKey=1%218%21YWJjZA--&NextRowKey=1%214%21MQ--",
			headers: map[string]string{},
		},
		{
			name:    "a queue message deleted by its remembered id and pop receipt",
			e:       Entry{RequestMethod: "DELETE", RequestURI: "https://fakestorage.queue.core.windows.net/q/messages/6e0687d7-ada1-4969-9f2f-a911fb023f18?popreceipt=AgAAAAMAAAAAAAAANAqn16882QE%3D", RequestHeaders: map[string]string{"x-ms-date": "Thu, 09 May 2019 01:20:09 GMT"}},
			url:     "http://127.0.0.1:2/acct/q/messages/11111111-2222-3333-4444-555555555555?popreceipt=cG9w",
			headers: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := testTarget.request(&tt.e, mem)
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tt.url {
				t.Errorf("URL %s, want %s", got, tt.url)
			}
			for k, v := range tt.headers {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s: %q, want %q", k, got, v)
				}
			}
			if auth := req.Header.Get("Authorization"); auth == "Sanitized" || !strings.HasPrefix(auth, "SharedKey") {
				t.Errorf("Authorization %q: not signed again", auth)
			}
		})
	}
}

// TestAnonymousNotSigned sends a request recorded without x-ms-version
// and x-ms-date (a browser's GET of a public blob) without credentials.
func TestAnonymousNotSigned(t *testing.T) {
	e := Entry{RequestMethod: "GET", RequestURI: "https://acct.blob.core.windows.net/c/b.txt", RequestHeaders: map[string]string{"Accept": "*/*"}}
	req, err := testTarget.request(&e, newMemory())
	if err != nil {
		t.Fatal(err)
	}
	if auth := req.Header.Get("Authorization"); auth != "" {
		t.Errorf("an anonymous request signed: Authorization %q", auth)
	}
}

func TestBatchRequestRewrite(t *testing.T) {
	inner := "--batch_98e0b02f\r\nContent-Type: multipart/mixed; boundary=changeset_3e6a\r\n\r\n--changeset_3e6a\r\n" +
		"Content-Type: application/http\r\n\r\nDELETE https://jhendrixprim.table.core.windows.net/t1(PartitionKey='p',RowKey='1') HTTP/1.1\r\n" +
		"If-Match: W/\"datetime'2024-02-26T20%3A23%3A51.0462365Z'\"\r\n\r\n\r\n--changeset_3e6a--\r\n\r\n--batch_98e0b02f--\r\n"
	body, _ := json.Marshal([]byte(inner)) // base64, as the test proxy stores it
	e := Entry{RequestMethod: "POST", RequestURI: "https://fakeaccount.table.core.windows.net/$batch",
		RequestHeaders: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_00000000-0000-0000-0000-000000000000"},
		RequestBody:    body}
	mem := newMemory()
	mem.remember(`W/"datetime'2024-02-26T20%3A23%3A51.0462365Z'"`, `W/"x"`)
	req, err := testTarget.request(&e, mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Content-Type"); got != "multipart/mixed; boundary=batch_98e0b02f" {
		t.Errorf("Content-Type %q: the body's boundary is not restored", got)
	}
	b, _ := io.ReadAll(req.Body)
	if !bytes.Contains(b, []byte("DELETE http://127.0.0.1:1/acct/t1(PartitionKey='p',RowKey='1') HTTP/1.1")) {
		t.Errorf("the operation's URL is not rewritten:\n%s", b)
	}
	if !bytes.Contains(b, []byte("If-Match: W/\"x\"\r\n")) {
		t.Errorf("the operation's If-Match is not the remembered ETag:\n%s", b)
	}
}

func TestBodyBytes(t *testing.T) {
	tests := []struct {
		raw, ct, want string
	}{
		{`null`, "application/json", ""},
		{`{"a": 1}`, "application/json", `{"a": 1}`},
		{`["<?xml?>\n", "<A/>"]`, "application/xml", "<?xml?>\n<A/>"},
		{`"<A/>"`, "application/xml", "<A/>"},
		{`"aGVsbG8="`, "application/octet-stream", "hello"},
	}
	for _, tt := range tests {
		got, err := bodyBytes(json.RawMessage(tt.raw), tt.ct)
		if err != nil || string(got) != tt.want {
			t.Errorf("bodyBytes(%s, %q) = %q, %v; want %q", tt.raw, tt.ct, got, err, tt.want)
		}
	}
}
