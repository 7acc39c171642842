package answer

import "net/http"

// The answers the Table, Queue and Blob services give in the same words
// (the REST API's common error codes). Each call returns a new Error.

// RequestBodyTooLarge is 413 RequestBodyTooLarge: a body over the
// operation's limit.
func RequestBodyTooLarge() *Error {
	return New(http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", "The request body is too large and exceeds the maximum permissible limit.")
}

// UnsupportedHTTPVerb is 405 UnsupportedHttpVerb: a method the resource
// does not answer.
func UnsupportedHTTPVerb() *Error {
	return New(http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.")
}

// InvalidURI is 400 InvalidUri: a path that names no resource of the
// service.
func InvalidURI() *Error {
	return New(http.StatusBadRequest, "InvalidUri", "The requested URI does not represent any resource on the server.")
}

// InvalidResourceName is 400 InvalidResourceName: a table, queue or
// container name with a character its rules refuse (Azure's spelling,
// "specifed", kept).
func InvalidResourceName() *Error {
	return New(http.StatusBadRequest, "InvalidResourceName", "The specifed resource name contains invalid characters.")
}

// ResourceNameLength is 400 OutOfRangeInput for a table, queue or
// container name too short or too long.
func ResourceNameLength() *Error {
	return New(http.StatusBadRequest, CodeOutOfRangeInput, "The specified resource name length is not within the permissible limits.")
}

// InvalidXMLDocument is 400 InvalidXmlDocument: a body that is not XML.
func InvalidXMLDocument() *Error {
	return New(http.StatusBadRequest, "InvalidXmlDocument", "XML specified is not syntactically valid.")
}

// InvalidMetadata is 400 InvalidMetadata: a metadata name that is not an
// identifier.
func InvalidMetadata() *Error {
	return New(http.StatusBadRequest, "InvalidMetadata", "The metadata specified is invalid. It has characters that are not permitted.")
}

// MetadataTooLarge is 400 MetadataTooLarge: metadata over 8 KiB.
func MetadataTooLarge() *Error {
	return New(http.StatusBadRequest, "MetadataTooLarge", "The size of the specified metadata exceeds the maximum size permitted.")
}

// InternalError is 500 InternalError.
func InternalError() *Error {
	return New(http.StatusInternalServerError, "InternalError", "The server encountered an internal error. Please retry the request.")
}

// SecondaryWrite is 403 AuthorizationFailure to a write sent to an
// account's read-only secondary endpoint. Azure answers 403 (AzCopy logs
// "403 Write operations are not allowed", Storage Explorer issue 4806);
// its error code is not at hand, and this is the generic one of a
// request not authorized.
func SecondaryWrite() *Error {
	return New(http.StatusForbidden, CodeAuthorizationFailure, "Write operations are not allowed.")
}
