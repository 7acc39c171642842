package azrules_test

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/azrules"
)

// The XML error body keeps the message's line breaks literal, as Azure's
// does, escapes markup, and parses back to the same code and message.
func TestXMLBodyKeepsLineBreaks(t *testing.T) {
	body := string(azrules.XMLBody("BlobNotFound", "a <b> & c", "id-1"))
	if strings.Contains(body, "&#xA;") || !strings.Contains(body, "a &lt;b&gt; &amp; c\nRequestId:id-1\nTime:") {
		t.Fatalf("body %s", body)
	}
	var e struct {
		Code, Message string
	}
	if err := xml.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	if e.Code != "BlobNotFound" || !strings.HasPrefix(e.Message, "a <b> & c\nRequestId:id-1\nTime:") {
		t.Fatalf("parsed %+v", e)
	}
}
