package answer

import "net/http"

// The answers to a request the server could not take in: its body past
// the time the server allows, or without the length an operation needs.
// Both are in Azure's list of common REST API error codes, with these
// statuses and messages.

// OperationTimedOut is 500 OperationTimedOut: the request did not complete
// in the time the service allows it (a body sent too slowly).
func OperationTimedOut() *Error {
	return New(http.StatusInternalServerError, "OperationTimedOut", "The operation could not be completed within the permitted time.")
}

// MissingContentLength is 411 MissingContentLengthHeader: an upload sent
// without a Content-Length (chunked) where the operation requires one.
func MissingContentLength() *Error {
	return New(http.StatusLengthRequired, "MissingContentLengthHeader", "The Content-Length header was not specified.")
}
