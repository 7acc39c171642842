package replay

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"testing/fstest"
	"time"
)

// TestTrimMarshalLoad trims a recorded exchange, writes it in this
// repository's form and reads it back: the recorder's headers gone, the
// service's kept, bodies the same bytes (text as text, binary as base64).
func TestTrimMarshalLoad(t *testing.T) {
	xmlBody, err := EncodeBody([]byte("\ufeff<?xml version=\"1.0\"?><A>&amp;</A>"), "application/xml")
	if err != nil {
		t.Fatal(err)
	}
	binBody, err := EncodeBody([]byte{0, 1, 2, 0xff}, "")
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{
		RequestMethod: "PUT", RequestURI: "https://acct.blob.core.windows.net/c/b",
		RequestHeaders: map[string]string{"Authorization": "SharedKey acct:c2ln", "User-Agent": "sdk", "Content-Length": "4",
			"x-ms-client-request-id": "1", "x-ms-date": "Thu, 09 May 2019 01:20:09 GMT", "x-ms-version": "2018-11-09", "x-ms-meta-Name": "v"},
		RequestBody: binBody, StatusCode: 201,
		ResponseHeaders: map[string]Header{"Date": "x", "Server": "Windows-Azure-Blob/1.0", "x-ms-request-id": "r",
			"Content-Type": "application/xml", "ETag": `"0x8D6D4168BD4CB41"`},
		ResponseBody: xmlBody,
	}
	Trim(&e)
	b, err := Marshal(&Recording{Source: "o/r@c p", Note: "n", Setup: []string{"https://acct.blob.core.windows.net/c?restype=container"}, Entries: []Entry{e}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Load(fstest.MapFS{"x/r.json": {Data: b}})
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got := recs[0]
	if got.Name != "x/r" || got.Source != "o/r@c p" || got.Note != "n" || len(got.Setup) != 1 {
		t.Errorf("read back %+v", got)
	}
	g := got.Entries[0]
	wantReq := map[string]string{"x-ms-date": "Thu, 09 May 2019 01:20:09 GMT", "x-ms-version": "2018-11-09", "x-ms-meta-Name": "v"}
	if !reflect.DeepEqual(g.RequestHeaders, wantReq) {
		t.Errorf("request headers %v, want %v", g.RequestHeaders, wantReq)
	}
	wantResp := map[string]Header{"Content-Type": "application/xml", "ETag": `"0x8D6D4168BD4CB41"`}
	if !reflect.DeepEqual(g.ResponseHeaders, wantResp) {
		t.Errorf("response headers %v, want %v", g.ResponseHeaders, wantResp)
	}
	if body, _ := DecodeBody(g.RequestBody, ""); string(body) != "\x00\x01\x02\xff" {
		t.Errorf("binary body read back as %q", body)
	}
	if body, _ := DecodeBody(g.ResponseBody, "application/xml"); string(body) != "\ufeff<?xml version=\"1.0\"?><A>&amp;</A>" {
		t.Errorf("XML body read back as %q", body)
	}
	if _, err := EncodeBody([]byte{0xff}, "application/json"); err == nil {
		t.Error("a JSON body that is not UTF-8 was encoded as text")
	}
}

// TestRecordedTime moves a condition's date chosen by the client's clock
// to the target's, leaves a remembered Last-Modified alone, and passes the
// session's waits on to the target's clock.
func TestRecordedTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var advanced []time.Duration
	tg := *testTarget
	tg.Now = func() time.Time { return now }
	tg.Advance = func(d time.Duration) { advanced = append(advanced, d) }
	mem := newMemory()
	mem.remember("Thu, 09 May 2019 01:00:00 GMT", "Fri, 02 Jan 2026 03:04:05 GMT")
	e := Entry{RequestMethod: "GET", RequestURI: "https://acct.blob.core.windows.net/c/b",
		RequestHeaders: map[string]string{"x-ms-date": "Thu, 09 May 2019 01:20:09 GMT",
			"If-Modified-Since": "Thu, 09 May 2019 01:35:09 GMT", "If-Unmodified-Since": "Thu, 09 May 2019 01:00:00 GMT"}}
	req, err := tg.request(&e, mem)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.Header.Get("If-Modified-Since"), now.Add(15*time.Minute).Format(http.TimeFormat); got != want {
		t.Errorf("If-Modified-Since %q, want %q (15 minutes after the target's now, as recorded)", got, want)
	}
	if got := req.Header.Get("If-Unmodified-Since"); got != "Fri, 02 Jan 2026 03:04:05 GMT" {
		t.Errorf("If-Unmodified-Since %q: a remembered Last-Modified is the target's, not shifted", got)
	}
	last := tg.wait(&e, time.Time{})
	e2 := Entry{RequestHeaders: map[string]string{"x-ms-date": "Thu, 09 May 2019 01:20:29 GMT"}}
	tg.wait(&e2, last)
	if !reflect.DeepEqual(advanced, []time.Duration{20 * time.Second}) {
		t.Errorf("advanced %v, want [20s]: the 20 s the session waited", advanced)
	}
}

// TestReadTestProxy reads the .NET SDK's form: headers as strings or
// lists, bodies as JSON, text or [].
func TestReadTestProxy(t *testing.T) {
	src := `{"Entries": [{"RequestUri": "https://a.table.core.windows.net/Tables", "RequestMethod": "POST",
		"RequestHeaders": {"Authorization": "Sanitized", "Content-Type": "application/json", "User-Agent": ["azsdk-net", "(.NET 5.0)"]}, "RequestBody": {"TableName": "t"},
		"StatusCode": 201, "ResponseHeaders": {"Server": ["Windows-Azure-Table/1.0", "Microsoft-HTTPAPI/2.0"]}, "ResponseBody": []}],
		"Variables": {"RandomSeed": "1"}}`
	entries, err := ReadTestProxy([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ResponseHeaders["Server"] != "Windows-Azure-Table/1.0, Microsoft-HTTPAPI/2.0" ||
		entries[0].RequestHeaders["User-Agent"] != "azsdk-net, (.NET 5.0)" {
		t.Errorf("read %+v", entries)
	}
	var v map[string]string
	if err := json.Unmarshal(entries[0].RequestBody, &v); err != nil || v["TableName"] != "t" {
		t.Errorf("JSON body %s", entries[0].RequestBody)
	}
	if _, err := ReadTestProxy([]byte(`{"Entries": []}`)); err == nil {
		t.Error("a recording without entries was read")
	}
}
