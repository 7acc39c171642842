package blobs

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// Azure's answers, as the Blob service words them.
var (
	errContainerNotFound      = answer.New(http.StatusNotFound, "ContainerNotFound", "The specified container does not exist.")
	errContainerAlreadyExists = answer.New(http.StatusConflict, "ContainerAlreadyExists", "The specified container already exists.")
	errBlobNotFound           = answer.New(http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
	errBlobAlreadyExists      = answer.New(http.StatusConflict, "BlobAlreadyExists", "The specified blob already exists.")
	errConditionNotMet        = answer.New(http.StatusPreconditionFailed, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
	errNotModified            = answer.New(http.StatusNotModified, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
	errUnsatisfiable          = answer.New(http.StatusBadRequest, "UnsatisfiableCondition", "The request includes an unsatisfiable condition for this operation.")
	errMultipleConditions     = answer.New(http.StatusBadRequest, "MultipleConditionHeadersNotSupported", "Multiple condition headers are not supported.")
	errInvalidRange           = answer.New(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The range specified is invalid for the current size of the resource.")
	errAppendPosition         = answer.New(http.StatusPreconditionFailed, "AppendPositionConditionNotMet", "The append position condition specified was not met.")
	errMaxBlobSize            = answer.New(http.StatusPreconditionFailed, "MaxBlobSizeConditionNotMet", "The max blob size condition specified was not met.")
	// Azure's words (a recorded session, azblob's TestSeal), not
	// Azurite's ("The specified blob is sealed, and its contents can't be
	// modified unless the blob is re-created after a delete.").
	errBlobSealed            = answer.New(http.StatusConflict, "BlobIsSealed", "The blob is sealed and its contents cannot be modified.")
	errAppendBlockCount      = answer.New(http.StatusConflict, "BlockCountExceedsLimit", "The committed block count cannot exceed the maximum limit of 50,000 blocks.")
	errUncommittedBlockCount = answer.New(http.StatusConflict, "BlockCountExceedsLimit", "The uncommitted block count cannot exceed the maximum limit of 100,000 blocks.")
	errBlockListTooLong      = answer.New(http.StatusBadRequest, "BlockListTooLong", "The block list may not contain more than 50,000 blocks.")
	errInvalidBlobType       = answer.New(http.StatusConflict, "InvalidBlobType", "The blob type is invalid for this operation.")
	errInvalidBlockList      = answer.New(http.StatusBadRequest, "InvalidBlockList", "The specified block list is invalid.")
	errInvalidBlobOrBlock    = answer.New(http.StatusBadRequest, "InvalidBlobOrBlock", "The specified blob or block content is invalid.")
	errInvalidMD5            = answer.New(http.StatusBadRequest, "InvalidMd5", "The MD5 value specified in the request is invalid. The MD5 value must be 128 bits and Base64-encoded.")
	errMD5Mismatch           = answer.New(http.StatusBadRequest, "Md5Mismatch", "The MD5 value specified in the request did not match with the MD5 value calculated by the server.")
	errCRC64Mismatch         = answer.New(http.StatusBadRequest, "Crc64Mismatch", "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.")
	errUnsupportedCondition  = answer.New(http.StatusBadRequest, "UnsupportedHeader", "One of the HTTP headers specified in the request is not supported.")
)

// errNotImplemented answers a feature of the Blob service the emulator
// does not have.
func errNotImplemented(what string) *answer.Error {
	return answer.New(http.StatusNotImplemented, "NotImplemented", "The emulator does not implement "+what+".")
}

// writeError answers r with e. A 304 has no body (HTTP forbids one); it
// carries the error code in x-ms-error-code. A 401 (a request without
// credentials) carries Azure's WWW-Authenticate challenge.
func writeError(w http.ResponseWriter, r *http.Request, e *answer.Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", auth.WWWAuthenticate)
	}
	if e.Status == http.StatusNotModified {
		h := w.Header()
		answer.SetHeaders(h, r, answer.RequestID())
		h.Set("x-ms-error-code", e.Code)
		w.WriteHeader(e.Status)
		return
	}
	w.Header().Set("Server", "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0")
	answer.WriteXML(w, r, e)
}
