package answer

import (
	"strconv"
)

// The Blob and Queue services' answers to a request's query parameters
// and headers. Each names what it refuses in the elements Azure puts after
// Message (a real Queue service session, emulator's testdata:
// OutOfRangeQueryParameterValue with QueryParameterName,
// QueryParameterValue, MinimumAllowed and MaximumAllowed).
const (
	MsgInvalidQueryParameter     = "Value for one of the query parameters specified in the request URI is invalid."
	MsgOutOfRangeQueryParameter  = "One of the query parameters specified in the request URI is outside the permissible range."
	MsgMissingQueryParameter     = "A query parameter that's mandatory for this request is not specified."
	MsgInvalidHeaderValue        = "The value for one of the HTTP headers is not in the correct format."
	MsgMissingRequiredHeader     = "An HTTP header that's mandatory for this request is not specified."
	CodeInvalidQueryParameter    = "InvalidQueryParameterValue"
	CodeOutOfRangeQueryParameter = "OutOfRangeQueryParameterValue"
	CodeMissingQueryParameter    = "MissingRequiredQueryParameter"
	CodeInvalidHeaderValue       = "InvalidHeaderValue"
	CodeMissingRequiredHeader    = "MissingRequiredHeader"
)

// InvalidQueryParameter is 400 InvalidQueryParameterValue for the query
// parameter name with value, and the reason when there is one.
func InvalidQueryParameter(name, value, reason string) *Error {
	e := badRequest(CodeInvalidQueryParameter, MsgInvalidQueryParameter)
	e.Details = []Detail{{"QueryParameterName", name}, {"QueryParameterValue", value}}
	if reason != "" {
		e.Details = append(e.Details, Detail{"Reason", reason})
	}
	return e
}

// OutOfRangeQueryParameter is 400 OutOfRangeQueryParameterValue for the
// query parameter name with value, outside [lo, hi].
func OutOfRangeQueryParameter(name, value string, lo, hi int64) *Error {
	e := badRequest(CodeOutOfRangeQueryParameter, MsgOutOfRangeQueryParameter)
	e.Details = []Detail{
		{"QueryParameterName", name}, {"QueryParameterValue", value},
		{"MinimumAllowed", strconv.FormatInt(lo, 10)}, {"MaximumAllowed", strconv.FormatInt(hi, 10)},
	}
	return e
}

// MissingQueryParameter is 400 MissingRequiredQueryParameter for the
// query parameter name.
func MissingQueryParameter(name string) *Error {
	e := badRequest(CodeMissingQueryParameter, MsgMissingQueryParameter)
	e.Details = []Detail{{"QueryParameterName", name}}
	return e
}

// InvalidHeader is 400 InvalidHeaderValue for the header name with value.
func InvalidHeader(name, value string) *Error {
	e := badRequest(CodeInvalidHeaderValue, MsgInvalidHeaderValue)
	e.Details = []Detail{{"HeaderName", name}, {"HeaderValue", value}}
	return e
}

// MissingHeader is 400 MissingRequiredHeader for the header name.
func MissingHeader(name string) *Error {
	e := badRequest(CodeMissingRequiredHeader, MsgMissingRequiredHeader)
	e.Details = []Detail{{"HeaderName", name}}
	return e
}
