package replay

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// testTarget is a target at a made-up endpoint; the comparer only
// rewrites recorded hosts to it.
var testTarget = &Target{
	TableURL: "http://127.0.0.1:1/acct", QueueURL: "http://127.0.0.1:2/acct", BlobURL: "http://127.0.0.1:3/acct",
	AccountName: "acct", AccountKey: "a2V5",
}

const jsonCT = "application/json; odata=minimalmetadata; streaming=true; charset=utf-8"

// recordedEntity is an entity insert's recorded answer.
func recordedEntity() Entry {
	return Entry{
		StatusCode: 201,
		ResponseHeaders: map[string]Header{
			"Content-Type": jsonCT,
			"ETag":         `W/"datetime'2024-02-26T20%3A24%3A10.2936191Z'"`,
			"Location":     "https://fakeaccount.table.core.windows.net/t1(PartitionKey='a',RowKey='b')",
			"Date":         "Mon, 26 Feb 2024 20:24:09 GMT",
		},
		ResponseBody: json.RawMessage(`{"odata.metadata":"https://fakeaccount.table.core.windows.net/$metadata#t1/@Element",
			"odata.etag":"W/\"datetime'2024-02-26T20%3A24%3A10.2936191Z'\"","PartitionKey":"a","RowKey":"b",
			"Timestamp":"2024-02-26T20:24:10.2936191Z","Double":3.0,"Int64@odata.type":"Edm.Int64","Int64":"5","List":[1,2]}`),
	}
}

// answer is a target's answer to compare with recordedEntity.
type answer struct {
	status int
	header http.Header
	body   string
}

func goodEntity() answer {
	return answer{
		status: 201,
		header: http.Header{
			"Content-Type": {"application/json;odata=minimalmetadata;streaming=true;charset=utf-8"},
			"Etag":         {`W/"datetime'2026-11-27T00%3A43%3A19.6973747Z'"`},
			"Location":     {"http://127.0.0.1:1/acct/t1(PartitionKey='a',RowKey='b')"},
		},
		body: `{"odata.metadata":"http://127.0.0.1:1/acct/$metadata#t1/@Element",
			"odata.etag":"W/\"datetime'2026-11-27T00%3A43%3A19.6973747Z'\"","PartitionKey":"a","RowKey":"b",
			"Timestamp":"2026-11-27T00:43:19.6973747Z","Double":3.0,"Int64@odata.type":"Edm.Int64","Int64":"5","List":[1,2]}`,
	}
}

func TestResponseRules(t *testing.T) {
	tests := []struct {
		name   string
		change func(a *answer)
		want   []string // substrings, one per expected difference; none means a match
	}{
		{"service-chosen values of their form match", func(*answer) {}, nil},
		{"status", func(a *answer) { a.status = 204 }, []string{"status: recorded 201, got 204"}},
		{"ETag of another form", func(a *answer) { a.header.Set("ETag", `"0x8DB"`) }, []string{"header ETag"}},
		{"Timestamp of another form", func(a *answer) {
			a.body = strings.Replace(a.body, "00:43:19.6973747Z", "00:43:19.697Z+01:00", 1)
		}, []string{"body.Timestamp"}},
		{"Content-Type parameter missing", func(a *answer) {
			a.header.Set("Content-Type", "application/json;odata=minimalmetadata")
		}, []string{"header Content-Type"}},
		{"Location on another table", func(a *answer) {
			a.header.Set("Location", "http://127.0.0.1:1/acct/t2(PartitionKey='a',RowKey='b')")
		}, []string{"header Location"}},
		{"Location missing", func(a *answer) { a.header.Del("Location") }, []string{"header Location"}},
		{"a Double written as an integer", func(a *answer) {
			a.body = strings.Replace(a.body, `"Double":3.0`, `"Double":3`, 1)
		}, []string{"body.Double: recorded 3.0, got 3"}},
		{"a type annotation missing", func(a *answer) {
			a.body = strings.Replace(a.body, `"Int64@odata.type":"Edm.Int64",`, ``, 1)
		}, []string{"body.Int64@odata.type"}},
		{"a property not recorded", func(a *answer) {
			a.body = strings.Replace(a.body, `"RowKey":"b",`, `"RowKey":"b","Extra":true,`, 1)
		}, []string{"body.Extra: not recorded"}},
		{"order", func(a *answer) { a.body = strings.Replace(a.body, `[1,2]`, `[2,1]`, 1) },
			[]string{"body.List[0]", "body.List[1]"}},
		{"metadata of another table", func(a *answer) {
			a.body = strings.Replace(a.body, `$metadata#t1/@Element`, `$metadata#Tables/@Element`, 1)
		}, []string{"body.odata.metadata"}},
		{"not JSON", func(a *answer) { a.body = "<xml/>" }, []string{"recorded JSON, got"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := recordedEntity()
			a := goodEntity()
			tt.change(&a)
			d := &differ{t: testTarget, mem: newMemory()}
			d.response(&e, a.status, a.header, []byte(a.body))
			if len(d.diffs) != len(tt.want) {
				t.Fatalf("got %d differences, want %d: %q", len(d.diffs), len(tt.want), d.diffs)
			}
			for _, w := range tt.want {
				found := false
				for _, got := range d.diffs {
					found = found || strings.Contains(got, w)
				}
				if !found {
					t.Errorf("no difference mentions %q: %q", w, d.diffs)
				}
			}
		})
	}
}

// TestRemembered checks that values compared by form are remembered, so
// a later request carries the target's ETag where the recording has
// Azure's.
func TestRemembered(t *testing.T) {
	e := recordedEntity()
	a := goodEntity()
	mem := newMemory()
	d := &differ{t: testTarget, mem: mem}
	d.response(&e, a.status, a.header, []byte(a.body))
	if len(d.diffs) != 0 {
		t.Fatal(d.diffs)
	}
	if got, want := mem.value(`W/"datetime'2024-02-26T20%3A24%3A10.2936191Z'"`), a.header.Get("ETag"); got != want {
		t.Errorf("the recorded ETag is answered as %q, want %q", got, want)
	}
}

func TestErrorMessage(t *testing.T) {
	rec := "The specified resource does not exist.\nRequestId:c1f8fdfd-e002-0055-33f1-68f169000000\nTime:2024-02-26T20:23:54.9072619Z"
	tests := []struct {
		got  string
		diff bool
	}{
		{"The specified resource does not exist.\nRequestId:0ff6557f-a4b2-4f16-a9d5-996c34523f18\nTime:2026-11-27T00:43:08.6810000Z", false},
		{"The specified resource does not exist.\nRequestId:0ff6557f-a4b2-4f16-a9d5-996c34523f18\nTime:2026-11-27T00:43:08.681Z", true},
		{"The specified resource does not exist.", true},
		{"The specified entity does not exist.\nRequestId:0ff6557f-a4b2-4f16-a9d5-996c34523f18\nTime:2026-11-27T00:43:08.6810000Z", true},
	}
	for _, tt := range tests {
		d := &differ{t: testTarget, mem: newMemory()}
		d.message("m", rec, tt.got)
		if (len(d.diffs) > 0) != tt.diff {
			t.Errorf("message %q: differences %q, want a difference: %v", tt.got, d.diffs, tt.diff)
		}
	}
}

func TestContinuationForm(t *testing.T) {
	for v, want := range map[string]bool{
		"1!12!Y29udFRva2Vu": true,
		"1!4!MQ--":          true,
		"1!5!MQ--":          false, // the length is wrong
		"MQ==":              false, // Azurite's form
		"2!4!MQ--":          false,
	} {
		if got := continuation(v); got != want {
			t.Errorf("continuation(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestXMLRules(t *testing.T) {
	rec := "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessagesList><QueueMessage><MessageId>f1fcaa4b-5b05-444a-85bb-5033ae52c598</MessageId>" +
		"<InsertionTime>Thu, 09 Feb 2023 04:33:01 GMT</InsertionTime><PopReceipt>AgAAAAMAAAAAAAAAnLUVmD882QE=</PopReceipt>" +
		"<DequeueCount>1</DequeueCount><MessageText>hello</MessageText></QueueMessage></QueueMessagesList>"
	good := "<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessagesList><QueueMessage><MessageId>0b1b0c59-3f5e-4d61-9a73-3b6f1d9f4e21</MessageId>" +
		"<InsertionTime>Fri, 27 Nov 2026 00:45:31 GMT</InsertionTime><PopReceipt>bXlyZWNlaXB0</PopReceipt>" +
		"<DequeueCount>1</DequeueCount><MessageText>hello</MessageText></QueueMessage></QueueMessagesList>"
	tests := []struct {
		name string
		got  string
		want int
	}{
		{"service-chosen values of their form match", good, 0},
		{"text", strings.Replace(good, "hello", "bye", 1), 1},
		{"dequeue count", strings.Replace(good, "<DequeueCount>1", "<DequeueCount>2", 1), 1},
		{"message id of another form", strings.Replace(good, "0b1b0c59-3f5e-4d61-9a73-3b6f1d9f4e21", "42", 1), 1},
		{"an element missing", strings.Replace(good, "<DequeueCount>1</DequeueCount>", "", 1), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := newMemory()
			d := &differ{t: testTarget, mem: mem}
			d.body("body", "application/xml", []byte(rec), "application/xml", []byte(tt.got))
			if len(d.diffs) != tt.want {
				t.Errorf("got %d differences, want %d: %q", len(d.diffs), tt.want, d.diffs)
			}
		})
	}
	mem := newMemory()
	(&differ{t: testTarget, mem: mem}).body("body", "application/xml", []byte(rec), "application/xml", []byte(good))
	if got := mem.value("AgAAAAMAAAAAAAAAnLUVmD882QE="); got != "bXlyZWNlaXB0" {
		t.Errorf("the recorded pop receipt is answered as %q", got)
	}
}

func TestBatchRules(t *testing.T) {
	part := func(boundary, status, extra string) string {
		return "--" + boundary + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
			"HTTP/1.1 " + status + "\r\nPreference-Applied: return-no-content\r\n" + extra + "\r\n"
	}
	body := func(cs, status2 string) string {
		return "--batchresponse_300af0a6-5bb8-4707-b42e-bc27a5302bfd\r\nContent-Type: multipart/mixed; boundary=" + cs + "\r\n\r\n" +
			part(cs, "204 No Content", "ETag: W/\"datetime'2024-02-26T20%3A27%3A43.491042Z'\"\r\n") +
			part(cs, status2, "") + "--" + cs + "--\r\n--batchresponse_300af0a6-5bb8-4707-b42e-bc27a5302bfd--\r\n"
	}
	recCT := "multipart/mixed; boundary=batchresponse_300af0a6-5bb8-4707-b42e-bc27a5302bfd"
	rec := body("changesetresponse_d0a01429-75d4-45dc-8fba-d218887fb054", "204 No Content")
	tests := []struct {
		name string
		got  string
		want int
	}{
		{"the same with other boundaries", strings.ReplaceAll(rec, "d0a01429", "aaaaaaaa"), 0},
		{"an operation's status", body("changesetresponse_d0a01429-75d4-45dc-8fba-d218887fb054", "404 Not Found"), 1},
		{"an operation's header", strings.Replace(rec, "Preference-Applied: return-no-content\r\n", "", 1), 1},
		{"not multipart", "{}", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &differ{t: testTarget, mem: newMemory()}
			d.body("body", recCT, []byte(rec), recCT, []byte(tt.got))
			if len(d.diffs) != tt.want {
				t.Errorf("got %d differences, want %d: %q", len(d.diffs), tt.want, d.diffs)
			}
		})
	}
}

// TestUnrecordedContinuation checks that a continuation Azure did not give
// is a difference: it tells the client there is more to read.
func TestUnrecordedContinuation(t *testing.T) {
	e := Entry{StatusCode: 200, ResponseHeaders: map[string]Header{"Content-Type": jsonCT}, ResponseBody: json.RawMessage(`{"value":[]}`)}
	d := &differ{t: testTarget, mem: newMemory()}
	d.response(&e, 200, http.Header{"Content-Type": {jsonCT}, "X-Ms-Continuation-Nextpartitionkey": {"1!4!MQ--"}}, []byte(`{"value":[]}`))
	if len(d.diffs) != 1 || !strings.Contains(d.diffs[0], "recorded none") {
		t.Errorf("differences %q, want the unrecorded continuation", d.diffs)
	}
}
