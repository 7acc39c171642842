package auth

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
)

// WWWAuthenticate is the challenge Azure sends in the WWW-Authenticate
// header of a 401 NoAuthenticationInformation answer (a request without
// credentials). Services that write such an answer set it:
// h.Set("WWW-Authenticate", auth.WWWAuthenticate). The tenant of a real
// account is its own; the emulator has none and names "common".
const WWWAuthenticate = "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize resource_id=https://storage.azure.com"

// The answers below have the codes and first lines Azure Storage writes
// ("Common REST API error codes"). None of them carries a key or a
// signature: Azure's AuthenticationErrorDetail quotes the request's
// signature and the string to sign, so it is not reproduced. A request a
// SAS does not cover is answer.AuthorizationFailure.

// forbidden is a 403 with code and message.
func forbidden(code, message string) *answer.Error {
	return answer.New(http.StatusForbidden, code, message)
}

// authenticationFailed is a wrong, missing or stale signature.
func authenticationFailed() *answer.Error {
	return forbidden("AuthenticationFailed", "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.")
}

// permissionMismatch is a SAS without the permission the operation needs.
func permissionMismatch() *answer.Error {
	return forbidden("AuthorizationPermissionMismatch", "This request is not authorized to perform this operation using this permission.")
}

// resourceTypeMismatch is an account SAS without the operation's
// resource type.
func resourceTypeMismatch() *answer.Error {
	return forbidden("AuthorizationResourceTypeMismatch", "This request is not authorized to perform this operation using this resource type.")
}

// serviceMismatch is an account SAS without the service asked.
func serviceMismatch() *answer.Error {
	return forbidden("AuthorizationServiceMismatch", "This request is not authorized to perform this operation using this service.")
}

// protocolMismatch is an https-only SAS on http.
func protocolMismatch() *answer.Error {
	return forbidden("AuthorizationProtocolMismatch", "This request is not authorized to perform this operation using this protocol.")
}

// sourceIPMismatch is a SAS whose address range leaves out ip.
func sourceIPMismatch(ip string) *answer.Error {
	return forbidden("AuthorizationSourceIPMismatch", "This request is not authorized to perform this operation using this source IP "+ip+".")
}

// noAuthenticationInformation is a request without credentials.
func noAuthenticationInformation() *answer.Error {
	return answer.New(http.StatusUnauthorized, "NoAuthenticationInformation", "Server failed to authenticate the request. Please refer to the information in the www-authenticate header.")
}

// invalidAuthenticationInfo is an Authorization header of the wrong form.
func invalidAuthenticationInfo() *answer.Error {
	return answer.New(http.StatusBadRequest, "InvalidAuthenticationInfo", "Authentication information is not given in the correct format. Check the value of Authorization header.")
}

// invalidQueryParameter is a SAS field that its stored access policy also
// sets.
func invalidQueryParameter() *answer.Error {
	return answer.New(http.StatusBadRequest, "InvalidQueryParameterValue", "Value for one of the query parameters specified in the request URI is invalid.")
}
