package queuehttp

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// azureBody is a Get Messages answer as the REST reference shows it
// (Get Messages, "Response body"), with the byte order mark Azure Storage
// puts before its XML answers.
const azureBody = "\xef\xbb\xbf" + `<?xml version="1.0" encoding="utf-8"?>
<QueueMessagesList>
  <QueueMessage>
    <MessageId>5974b586-0df3-4e2d-ad0c-18e3892bfca2</MessageId>
    <InsertionTime>Fri, 09 Oct 2009 21:04:30 GMT</InsertionTime>
    <ExpirationTime>Fri, 16 Oct 2009 21:04:30 GMT</ExpirationTime>
    <PopReceipt>YzQ4Yzg1MDItYTc0Ny00OWNjLTkxYTUtZGM0MDFiZDAwYzEw</PopReceipt>
    <TimeNextVisible>Fri, 09 Oct 2009 23:29:20 GMT</TimeNextVisible>
    <DequeueCount>1</DequeueCount>
    <MessageText>PHRlc3Q+dGhpcyBpcyBhIHRlc3QgbWVzc2FnZTwvdGVzdD4=</MessageText>
  </QueueMessage>
</QueueMessagesList>`

// seeds are documents of the shapes services send and of the ones the
// scanner must hand to encoding/xml.
var seeds = []string{
	azureBody,
	`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><QueueMessagesList/>`,
	`<?xml version="1.0" encoding="utf-8"?><QueueMessagesList />`,
	`<?xml version="1.0" encoding="utf-8"?><QueueMessagesList></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageId>a</MessageId><PopReceipt>AgAAAAMAAAAAAAAAnzBydXB/3QE=</PopReceipt><DequeueCount>3</DequeueCount><MessageText>{&#34;v&#34;:1,&quot;id&quot;:&quot;x&amp;y&lt;z&gt;&apos;&quot;}</MessageText></QueueMessage></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageText/><Unknown>u</Unknown><MessageId>b</MessageId></QueueMessage><QueueMessage/></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageText>line&#xA;tab&#9;é 漢字 😀</MessageText></QueueMessage></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageText>a` + "\r\n" + `b</MessageText></QueueMessage></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageText><![CDATA[<x>]]></MessageText></QueueMessage></QueueMessagesList>`,
	`<QueueMessagesList><!-- c --><QueueMessage><MessageId a="1">c</MessageId></QueueMessage></QueueMessagesList>`,
	`<?xml version="1.0" encoding="ISO-8859-1"?><QueueMessagesList/>`,
	`<Other/>`,
	`<QueueMessagesList><QueueMessage><MessageText>&bogus;</MessageText></QueueMessage></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageText>a]]>b</MessageText></QueueMessage></QueueMessagesList>`,
	`<QueueMessagesList><QueueMessage><MessageText>` + "\x01" + `</MessageText></QueueMessage></QueueMessagesList>`,
	// Azure's own form, as recordings of a real account show it (the
	// Azure SDK for JavaScript's queue tests, x-ms-version 2018-03-28 and
	// 2020-02-10; TestRecordedAnswersAreScanned reads the ones the
	// emulator's replay holds): no white space, only & < > escaped.
	`<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage><MessageId>0513faf7-1478-4ab7-b729-a4a303acc33a</MessageId>` +
		`<InsertionTime>Tue, 25 Jun 2019 20:44:50 GMT</InsertionTime><ExpirationTime>Tue, 25 Jun 2019 20:45:30 GMT</ExpirationTime>` +
		`<PopReceipt>AgAAAAMAAAAAAAAAT+DM25Yr1QE=</PopReceipt><TimeNextVisible>Tue, 25 Jun 2019 20:45:01 GMT</TimeNextVisible>` +
		`<DequeueCount>1</DequeueCount><MessageText>{"a":'b'} &amp; x&gt;y&lt;z 漢字 ÎᦡC 𕩣 ` + "\ufffd" + `</MessageText></QueueMessage></QueueMessagesList>`,
}

// FuzzParseMessages: whatever document the scanner accepts, encoding/xml
// (azqueue's reader) reads to the same fields.
func FuzzParseMessages(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := scanMessages(b)
		if !ok {
			return
		}
		var l rawList
		if err := xml.Unmarshal(b, &l); err != nil {
			t.Fatalf("the scanner read %q, encoding/xml refuses it: %v", b, err)
		}
		if len(got) == 0 && len(l.Items) == 0 {
			return
		}
		if !reflect.DeepEqual(got, l.Items) {
			t.Fatalf("%q:\nscanner     %+v\nencoding/xml %+v", b, got, l.Items)
		}
	})
}

// TestParseMessages: the scanner reads the services' documents itself
// and leaves the others to encoding/xml, and both read them alike.
func TestParseMessages(t *testing.T) {
	scanned := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 15: true}
	for i, s := range seeds {
		_, ok := scanMessages([]byte(strings.TrimPrefix(s, "\xef\xbb\xbf")))
		if ok != scanned[i] {
			t.Errorf("seed %d: scanned %v, want %v: %q", i, ok, scanned[i], s)
		}
	}
	ms, err := ParseMessages([]byte(azureBody))
	if err != nil {
		t.Fatal(err)
	}
	want := Message{
		ID: "5974b586-0df3-4e2d-ad0c-18e3892bfca2", PopReceipt: "YzQ4Yzg1MDItYTc0Ny00OWNjLTkxYTUtZGM0MDFiZDAwYzEw",
		Text: "PHRlc3Q+dGhpcyBpcyBhIHRlc3QgbWVzc2FnZTwvdGVzdD4=", DequeueCount: 1,
		InsertionTime:   time.Date(2009, 10, 9, 21, 4, 30, 0, time.UTC),
		TimeNextVisible: time.Date(2009, 10, 9, 23, 29, 20, 0, time.UTC),
	}
	if len(ms) != 1 || !ms[0].InsertionTime.Equal(want.InsertionTime) || !ms[0].TimeNextVisible.Equal(want.TimeNextVisible) ||
		ms[0].ID != want.ID || ms[0].PopReceipt != want.PopReceipt ||
		ms[0].Text != want.Text || ms[0].DequeueCount != 1 {
		t.Fatalf("ParseMessages = %+v, want [%+v]", ms, want)
	}
	ms, err = ParseMessages([]byte(seeds[4]))
	if err != nil || len(ms) != 1 || ms[0].Text != `{"v":1,"id":"x&y<z>'"}` || ms[0].DequeueCount != 3 {
		t.Fatalf("ParseMessages(entities) = %+v, %v", ms, err)
	}
	// Read by encoding/xml: a CRLF becomes a LF, a CDATA section is text.
	for i, text := range map[int]string{7: "a\nb", 8: "<x>"} {
		ms, err := ParseMessages([]byte(seeds[i]))
		if err != nil || len(ms) != 1 || ms[0].Text != text {
			t.Errorf("ParseMessages(seed %d) = %+v, %v; want the text %q", i, ms, err, text)
		}
	}
	for _, bad := range []string{seeds[10], seeds[11], seeds[12], seeds[13], seeds[14], "", "<QueueMessagesList>",
		`<QueueMessagesList><QueueMessage><DequeueCount>x</DequeueCount></QueueMessage></QueueMessagesList>`,
		`<QueueMessagesList><QueueMessage><InsertionTime>yesterday</InsertionTime></QueueMessage></QueueMessagesList>`} {
		if ms, err := ParseMessages([]byte(bad)); !errors.Is(err, errMalformed) {
			t.Errorf("ParseMessages(%q) = %+v, %v; want errMalformed", bad, ms, err)
		}
	}
}

// TestMessageBody: an update's body escapes the text as encoding/xml
// does, and reads back to it.
func TestMessageBody(t *testing.T) {
	text := `{"a":"<b> & 'c'` + "\n\t" + `"}`
	var m struct {
		Text string `xml:"MessageText"`
	}
	if err := xml.Unmarshal(messageBody(text), &m); err != nil || m.Text != text {
		t.Fatalf("messageBody(%q) reads back as %q, %v", text, m.Text, err)
	}
}

// BenchmarkParseMessages reads a batch of 32 messages as the worker
// receives them.
func BenchmarkParseMessages(b *testing.B) {
	var body strings.Builder
	body.WriteString(`<?xml version="1.0" encoding="utf-8"?><QueueMessagesList>`)
	for range 32 {
		body.WriteString(`<QueueMessage><MessageId>0513faf7-1478-4ab7-b729-a4a303acc33a</MessageId><InsertionTime>Tue, 25 Jun 2019 20:44:50 GMT</InsertionTime>` +
			`<ExpirationTime>Tue, 25 Jun 2019 20:45:30 GMT</ExpirationTime><PopReceipt>AgAAAAMAAAAAAAAAT+DM25Yr1QE=</PopReceipt>` +
			`<TimeNextVisible>Tue, 25 Jun 2019 20:45:01 GMT</TimeNextVisible><DequeueCount>1</DequeueCount><MessageText>` +
			`{&#34;v&#34;:1,&#34;id&#34;:&#34;4cf02896cdff4d7972b30621e16e7daf&#34;,&#34;steps&#34;:[{&#34;kind&#34;:&#34;upsert-entity&#34;,` +
			`&#34;args&#34;:{&#34;table&#34;:&#34;orders&#34;,&#34;entity&#34;:{&#34;PartitionKey&#34;:&#34;p1&#34;,&#34;RowKey&#34;:&#34;1&#34;,&#34;V&#34;:1}}}]}` +
			`</MessageText></QueueMessage>`)
	}
	body.WriteString(`</QueueMessagesList>`)
	in := []byte(body.String())
	for _, bc := range []struct {
		name  string
		parse func() error
	}{
		{"scanner", func() error { _, err := ParseMessages(in); return err }},
		{"encoding-xml", func() error { var l rawList; return xml.Unmarshal(in, &l) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := bc.parse(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRecordedAnswersAreScanned: every answer to Get Messages in the
// recordings of real accounts the emulator's replay holds (the Azure SDKs
// for Go, .NET and Python, 2019 to 2021) is read by the scanner, as
// encoding/xml reads it.
func TestRecordedAnswersAreScanned(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "emulator", "testdata", "recordings", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	getMessages := regexp.MustCompile(`/messages(\?|$)`)
	n, full := 0, 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Entries []struct {
				RequestMethod, RequestUri string
				StatusCode                int
				ResponseBody              *string
			}
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			continue // not a recording (a list, a README's data)
		}
		for _, e := range rec.Entries {
			if e.RequestMethod != "GET" || e.StatusCode != 200 || e.ResponseBody == nil || !getMessages.MatchString(e.RequestUri) {
				continue
			}
			n++
			body := bytes.TrimPrefix([]byte(*e.ResponseBody), []byte("\xef\xbb\xbf"))
			got, ok := scanMessages(body)
			if !ok {
				t.Errorf("%s: the scanner leaves %q to encoding/xml", filepath.Base(f), body)
				continue
			}
			var l rawList
			if err := xml.Unmarshal(body, &l); err != nil || len(got)+len(l.Items) > 0 && !reflect.DeepEqual(got, l.Items) {
				t.Errorf("%s: scanner %+v, encoding/xml %+v, %v", filepath.Base(f), got, l.Items, err)
			}
			if _, err := ParseMessages([]byte(*e.ResponseBody)); err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
			if len(got) > 0 {
				full++
			}
		}
	}
	// The recordings hold 32 such answers, 28 with messages: fewer means
	// they moved, and this test would prove nothing.
	if n < 30 || full < 25 {
		t.Fatalf("found %d recorded answers to Get Messages, %d with messages; want at least 30 and 25", n, full)
	}
}
