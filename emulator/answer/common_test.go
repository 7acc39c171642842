package answer_test

import (
	"net/http"
	"testing"

	"github.com/tablekit/tablekit/emulator/answer"
)

// The answers common to the services, in Azure's words (as recorded:
// emulator's testdata and the services' tests against
// Azurite), each a new value a caller may give details to.
func TestCommonAnswers(t *testing.T) {
	cases := []struct {
		answer  func() *answer.Error
		status  int
		code    string
		message string
	}{
		{answer.RequestBodyTooLarge, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", "The request body is too large and exceeds the maximum permissible limit."},
		{answer.UnsupportedHTTPVerb, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb."},
		{answer.InvalidURI, http.StatusBadRequest, "InvalidUri", "The requested URI does not represent any resource on the server."},
		{answer.InvalidResourceName, http.StatusBadRequest, "InvalidResourceName", "The specifed resource name contains invalid characters."},
		{answer.ResourceNameLength, http.StatusBadRequest, "OutOfRangeInput", "The specified resource name length is not within the permissible limits."},
		{answer.InvalidXMLDocument, http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid."},
		{answer.InvalidMetadata, http.StatusBadRequest, "InvalidMetadata", "The metadata specified is invalid. It has characters that are not permitted."},
		{answer.MetadataTooLarge, http.StatusBadRequest, "MetadataTooLarge", "The size of the specified metadata exceeds the maximum size permitted."},
		{answer.InternalError, http.StatusInternalServerError, "InternalError", "The server encountered an internal error. Please retry the request."},
		{answer.SecondaryWrite, http.StatusForbidden, "AuthorizationFailure", "Write operations are not allowed."},
		{answer.InvalidInput, http.StatusBadRequest, "InvalidInput", "One of the request inputs is not valid."},
		{answer.OutOfRangeInput, http.StatusBadRequest, "OutOfRangeInput", "One of the request inputs is out of range."},
	}
	for _, c := range cases {
		e := c.answer()
		if e.Status != c.status || e.Code != c.code || e.Message != c.message || len(e.Details) != 0 {
			t.Errorf("%s: %d %s %q %v; want %d %s %q", c.code, e.Status, e.Code, e.Message, e.Details, c.status, c.code, c.message)
		}
		if c.answer() == e {
			t.Errorf("%s: two calls returned the same value", c.code)
		}
	}
}
