package answer_test

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/answer"
)

// The XML error body keeps the message's line breaks literal, as Azure's
// does, escapes markup, and parses back to the same code and message.
func TestXMLBodyKeepsLineBreaks(t *testing.T) {
	body := string(answer.XMLBody("BlobNotFound", "a <b> & c", "id-1"))
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

// An error's details follow Message in the XML body, in order, escaped,
// as Azure's OutOfRangeQueryParameterValue carries them (a real Queue
// service session, emulator's testdata); the Table service's
// JSON leaves them out; WithDetails leaves the shared answer unchanged.
func TestErrorDetails(t *testing.T) {
	base := answer.New(http.StatusBadRequest, "OutOfRangeQueryParameterValue", "One of the query parameters specified in the request URI is outside the permissible range.")
	e := base.WithDetails(
		answer.Detail{Name: "QueryParameterName", Value: "numofmessages"},
		answer.Detail{Name: "QueryParameterValue", Value: "<33&>"},
	).WithDetails(answer.Detail{Name: "MinimumAllowed", Value: "1"}, answer.Detail{Name: "MaximumAllowed", Value: "32"})
	if len(base.Details) != 0 {
		t.Fatalf("WithDetails changed the shared answer: %+v", base.Details)
	}
	r := httptest.NewRequest(http.MethodGet, "/devstoreaccount1/q/messages?numofmessages=33", nil)
	w := httptest.NewRecorder()
	answer.WriteXML(w, r, e)
	body := w.Body.String()
	want := "</Message><QueryParameterName>numofmessages</QueryParameterName><QueryParameterValue>&lt;33&amp;&gt;</QueryParameterValue><MinimumAllowed>1</MinimumAllowed><MaximumAllowed>32</MaximumAllowed></Error>"
	if !strings.HasSuffix(body, want) {
		t.Fatalf("XML body %s\nwant it to end %s", body, want)
	}
	var parsed struct {
		Code, Message, QueryParameterName, QueryParameterValue string
	}
	if err := xml.Unmarshal(w.Body.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Code != e.Code || parsed.QueryParameterName != "numofmessages" || parsed.QueryParameterValue != "<33&>" {
		t.Fatalf("parsed %+v", parsed)
	}
	w = httptest.NewRecorder()
	answer.WriteTable(w, r, e)
	if strings.Contains(w.Body.String(), "numofmessages") {
		t.Fatalf("JSON body carries the details: %s", w.Body.String())
	}
}
