package main

import (
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/replay"
)

// cassette is a vcrpy cassette as the Azure SDK for Python recorded them:
// headers in lists, a text body in single quotes, a response body in
// {string: ...}, a binary body as !!binary, a default port in the URI.
const cassette = `interactions:
- request:
    body: '<?xml version=''1.0'' encoding=''utf-8''?>

      <QueueMessage><MessageText>message1</MessageText></QueueMessage>'
    headers:
      Connection: [keep-alive]
      Content-Length: ['103']
      User-Agent: [Azure-Storage/1.4.0-2.0.0 (Python CPython 3.7.0; Darwin 18.5.0)]
      x-ms-client-request-id: [95f6abb8-71f8-11e9-a804-acde48001122]
      x-ms-date: ['Thu, 09 May 2019 01:20:09 GMT']
      x-ms-version: ['2018-03-28']
    method: POST
    uri: https://storagename.queue.core.windows.net:443/queuec0820c59/messages
  response:
    body: {string: "\uFEFF<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessagesList><QueueMessage><MessageId>e452b094-6ed0-4db3-b893-acd67db571fb</MessageId></QueueMessage></QueueMessagesList>"}
    headers:
      Content-Type: [application/xml]
      Date: ['Thu, 09 May 2019 01:20:08 GMT']
      Server: [Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0]
      x-ms-version: ['2018-03-28']
    status: {code: 201, message: Created}
- request:
    body: !!binary |
      AAEC/w==
    headers:
      x-ms-blob-type: [BlockBlob]
    method: PUT
    uri: https://storagename.blob.core.windows.net/utcontainer1/blob1
  response:
    body: {string: ''}
    headers:
      Content-MD5: [4fr/s+YU5sL7p0KWliOGtw==]
    status: {code: 201, message: Created}
version: 1
`

func TestReadVCR(t *testing.T) {
	entries, err := readVCR([]byte(cassette))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	e := entries[0]
	if e.RequestURI != "https://storagename.queue.core.windows.net/queuec0820c59/messages" || e.StatusCode != 201 {
		t.Errorf("URI %q status %d", e.RequestURI, e.StatusCode)
	}
	body, err := replay.DecodeBody(e.RequestBody, "")
	if want := "<?xml version='1.0' encoding='utf-8'?>\n<QueueMessage><MessageText>message1</MessageText></QueueMessage>"; err != nil || string(body) != want {
		t.Errorf("request body %q, %v; want %q", body, err, want)
	}
	resp, err := replay.DecodeBody(e.ResponseBody, "application/xml")
	if err != nil || !strings.HasPrefix(string(resp), "\ufeff<?xml") || !strings.Contains(string(resp), "<MessageId>e452b094") {
		t.Errorf("response body %q, %v", resp, err)
	}
	if e.RequestHeaders["x-ms-date"] != "Thu, 09 May 2019 01:20:09 GMT" || e.ResponseHeaders["Server"] != "Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0" {
		t.Errorf("headers %v %v", e.RequestHeaders, e.ResponseHeaders)
	}
	bin, err := replay.DecodeBody(entries[1].RequestBody, "")
	if err != nil || string(bin) != "\x00\x01\x02\xff" {
		t.Errorf("!!binary body %q, %v", bin, err)
	}
}

// TestConvertRefuses refuses what the replay cannot send again faithfully,
// and makes a container the session found there its Setup.
func TestConvertRefuses(t *testing.T) {
	b, err := convert([]byte(cassette), "r.yaml", "o/r@c r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"User-Agent", "x-ms-client-request-id", "Connection", "Windows-Azure-Queue", "Content-Length\":\"103"} {
		if strings.Contains(string(b), gone) {
			t.Errorf("the recorder's %s is kept:\n%s", gone, b)
		}
	}
	if !strings.Contains(string(b), `"Setup": ["https://storagename.queue.core.windows.net/queuec0820c59","https://storagename.blob.core.windows.net/utcontainer1"]`) {
		t.Errorf("no Setup for the queue and the container the session found there:\n%s", b)
	}
	refused := map[string]string{
		"a SAS":                    strings.Replace(cassette, "/blob1", "/blob1?sv=2018-11-09&sig=abc", 1),
		"a signature in a body":    strings.Replace(cassette, "AAEC/w==", "CkF1dGhvcml6YXRpb246IFNoYXJlZEtleSBhOmI=", 1),
		"a secondary location":     strings.Replace(cassette, "storagename.blob", "storagename-secondary.blob", 1),
		"no Azure server":          strings.Replace(cassette, "Server: [Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0]", "Server: [Azurite-Queue/3.37.0]", 1),
		"a token endpoint":         strings.Replace(cassette, "https://storagename.blob.core.windows.net", "https://login.microsoftonline.com", 1),
		"a copy source with a SAS": strings.Replace(cassette, "x-ms-blob-type: [BlockBlob]", "x-ms-copy-source: ['https://a.blob.core.windows.net/c/b?sig=x']", 1),
	}
	for what, src := range refused {
		if _, err := convert([]byte(src), "r.yaml", "s"); err == nil {
			t.Errorf("%s: converted", what)
		}
	}
}
