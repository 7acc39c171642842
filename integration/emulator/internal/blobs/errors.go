package blobs

import (
	"net/http"

	"github.com/tablekit/tablekit/integration/emulator/internal/auth"
	"github.com/tablekit/tablekit/internal/azrules"
)

// Azure's answers, as the Blob service words them.
var (
	errContainerNotFound      = azrules.New(http.StatusNotFound, "ContainerNotFound", "The specified container does not exist.")
	errContainerAlreadyExists = azrules.New(http.StatusConflict, "ContainerAlreadyExists", "The specified container already exists.")
	errBlobNotFound           = azrules.New(http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
	errBlobAlreadyExists      = azrules.New(http.StatusConflict, "BlobAlreadyExists", "The specified blob already exists.")
	errConditionNotMet        = azrules.New(http.StatusPreconditionFailed, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
	errNotModified            = azrules.New(http.StatusNotModified, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
	errUnsatisfiable          = azrules.New(http.StatusBadRequest, "UnsatisfiableCondition", "The request includes an unsatisfiable condition for this operation.")
	errMultipleConditions     = azrules.New(http.StatusBadRequest, "MultipleConditionHeadersNotSupported", "Multiple condition headers are not supported.")
	errInvalidRange           = azrules.New(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The range specified is invalid for the current size of the resource.")
	errAppendPosition         = azrules.New(http.StatusPreconditionFailed, "AppendPositionConditionNotMet", "The append position condition specified was not met.")
	errMaxBlobSize            = azrules.New(http.StatusPreconditionFailed, "MaxBlobSizeConditionNotMet", "The max blob size condition specified was not met.")
	// Azure's words (a recorded session, azblob's TestSeal), not
	// Azurite's ("The specified blob is sealed, and its contents can't be
	// modified unless the blob is re-created after a delete.").
	errBlobSealed            = azrules.New(http.StatusConflict, "BlobIsSealed", "The blob is sealed and its contents cannot be modified.")
	errAppendBlockCount      = azrules.New(http.StatusConflict, "BlockCountExceedsLimit", "The committed block count cannot exceed the maximum limit of 50,000 blocks.")
	errUncommittedBlockCount = azrules.New(http.StatusConflict, "BlockCountExceedsLimit", "The uncommitted block count cannot exceed the maximum limit of 100,000 blocks.")
	errBlockListTooLong      = azrules.New(http.StatusBadRequest, "BlockListTooLong", "The block list may not contain more than 50,000 blocks.")
	errInvalidBlobType       = azrules.New(http.StatusConflict, "InvalidBlobType", "The blob type is invalid for this operation.")
	errInvalidBlockList      = azrules.New(http.StatusBadRequest, "InvalidBlockList", "The specified block list is invalid.")
	errInvalidBlobOrBlock    = azrules.New(http.StatusBadRequest, "InvalidBlobOrBlock", "The specified blob or block content is invalid.")
	errInvalidMD5            = azrules.New(http.StatusBadRequest, "InvalidMd5", "The MD5 value specified in the request is invalid. The MD5 value must be 128 bits and Base64-encoded.")
	errMD5Mismatch           = azrules.New(http.StatusBadRequest, "Md5Mismatch", "The MD5 value specified in the request did not match with the MD5 value calculated by the server.")
	errCRC64Mismatch         = azrules.New(http.StatusBadRequest, "Crc64Mismatch", "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.")
	errUnsupportedCondition  = azrules.New(http.StatusBadRequest, "UnsupportedHeader", "One of the HTTP headers specified in the request is not supported.")
)

// errNotImplemented answers a feature of the Blob service the emulator
// does not have.
func errNotImplemented(what string) *azrules.Error {
	return azrules.New(http.StatusNotImplemented, "NotImplemented", "The emulator does not implement "+what+".")
}

// writeError answers r with e. A 304 has no body (HTTP forbids one); it
// carries the error code in x-ms-error-code. A 401 (a request without
// credentials) carries Azure's WWW-Authenticate challenge.
func writeError(w http.ResponseWriter, r *http.Request, e *azrules.Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", auth.WWWAuthenticate)
	}
	if e.Status == http.StatusNotModified {
		h := w.Header()
		azrules.SetHeaders(h, r, azrules.RequestID())
		h.Set("x-ms-error-code", e.Code)
		w.WriteHeader(e.Status)
		return
	}
	w.Header().Set("Server", "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0")
	azrules.WriteXML(w, r, e)
}
