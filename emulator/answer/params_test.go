package answer_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Each answer to a query parameter or header names it after Message, in
// the order Azure writes the elements.
func TestParameterAnswers(t *testing.T) {
	cases := []struct {
		e      *answer.Error
		code   string
		suffix string
	}{
		{answer.OutOfRangeQueryParameter("numofmessages", "33", 1, 32), "OutOfRangeQueryParameterValue",
			"<QueryParameterName>numofmessages</QueryParameterName><QueryParameterValue>33</QueryParameterValue><MinimumAllowed>1</MinimumAllowed><MaximumAllowed>32</MaximumAllowed></Error>"},
		{answer.InvalidQueryParameter("messagettl", "0", "Value must be greater than or equal to 1, or -1 to indicate an infinite TTL."), "InvalidQueryParameterValue",
			"<QueryParameterName>messagettl</QueryParameterName><QueryParameterValue>0</QueryParameterValue><Reason>Value must be greater than or equal to 1, or -1 to indicate an infinite TTL.</Reason></Error>"},
		{answer.InvalidQueryParameter("comp", "x", ""), "InvalidQueryParameterValue",
			"</Message><QueryParameterName>comp</QueryParameterName><QueryParameterValue>x</QueryParameterValue></Error>"},
		{answer.MissingQueryParameter("popreceipt"), "MissingRequiredQueryParameter",
			"</Message><QueryParameterName>popreceipt</QueryParameterName></Error>"},
		{answer.InvalidHeader("x-ms-blob-type", "Nope"), "InvalidHeaderValue",
			"</Message><HeaderName>x-ms-blob-type</HeaderName><HeaderValue>Nope</HeaderValue></Error>"},
		{answer.MissingHeader("x-ms-blob-type"), "MissingRequiredHeader",
			"</Message><HeaderName>x-ms-blob-type</HeaderName></Error>"},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		answer.WriteXML(w, httptest.NewRequest(http.MethodGet, "/a", nil), c.e)
		if w.Code != http.StatusBadRequest || w.Header().Get("x-ms-error-code") != c.code {
			t.Errorf("%s: %d %s", c.code, w.Code, w.Header().Get("x-ms-error-code"))
		}
		if !strings.HasSuffix(w.Body.String(), c.suffix) {
			t.Errorf("%s: body %s\nwant it to end %s", c.code, w.Body.String(), c.suffix)
		}
	}
}
