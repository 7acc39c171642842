package auth

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
)

// The answers' codes and first lines, as Azure Storage writes them
// ("Common REST API error codes"). None of them carries a key or a
// signature: Azure's AuthenticationErrorDetail quotes the request's
// signature and the string to sign, so it is not reproduced.
const (
	codeAuthenticationFailed   = "AuthenticationFailed"
	msgAuthenticationFailed    = "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."
	codeNoAuthenticationInfo   = "NoAuthenticationInformation"
	msgNoAuthenticationInfo    = "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."
	codeInvalidAuthInfo        = "InvalidAuthenticationInfo"
	msgInvalidAuthInfo         = "Authentication information is not given in the correct format. Check the value of Authorization header."
	codeAuthorizationFailure   = "AuthorizationFailure"
	msgAuthorizationFailure    = "This request is not authorized to perform this operation."
	codePermissionMismatch     = "AuthorizationPermissionMismatch"
	msgPermissionMismatch      = "This request is not authorized to perform this operation using this permission."
	codeResourceTypeMismatch   = "AuthorizationResourceTypeMismatch"
	msgResourceTypeMismatch    = "This request is not authorized to perform this operation using this resource type."
	codeServiceMismatch        = "AuthorizationServiceMismatch"
	msgServiceMismatch         = "This request is not authorized to perform this operation using this service."
	codeProtocolMismatch       = "AuthorizationProtocolMismatch"
	msgProtocolMismatch        = "This request is not authorized to perform this operation using this protocol."
	codeSourceIPMismatch       = "AuthorizationSourceIPMismatch"
	msgSourceIPMismatchPrefix  = "This request is not authorized to perform this operation using this source IP "
	codeInvalidQueryParameter  = "InvalidQueryParameterValue"
	msgInvalidQueryParameter   = "Value for one of the query parameters specified in the request URI is invalid."
	wwwAuthenticateHeaderValue = "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize resource_id=https://storage.azure.com"
)

// WWWAuthenticate is the challenge Azure sends in the WWW-Authenticate
// header of a 401 NoAuthenticationInformation answer (a request without
// credentials). Services that write such an answer set it:
// h.Set("WWW-Authenticate", auth.WWWAuthenticate). The tenant of a real
// account is its own; the emulator has none and names "common".
const WWWAuthenticate = wwwAuthenticateHeaderValue

// authenticationFailed is a wrong, missing or stale signature.
func authenticationFailed() *answer.Error {
	return answer.New(http.StatusForbidden, codeAuthenticationFailed, msgAuthenticationFailed)
}

func authorizationFailure() *answer.Error {
	return answer.New(http.StatusForbidden, codeAuthorizationFailure, msgAuthorizationFailure)
}

func permissionMismatch() *answer.Error {
	return answer.New(http.StatusForbidden, codePermissionMismatch, msgPermissionMismatch)
}

func resourceTypeMismatch() *answer.Error {
	return answer.New(http.StatusForbidden, codeResourceTypeMismatch, msgResourceTypeMismatch)
}

func serviceMismatch() *answer.Error {
	return answer.New(http.StatusForbidden, codeServiceMismatch, msgServiceMismatch)
}

func protocolMismatch() *answer.Error {
	return answer.New(http.StatusForbidden, codeProtocolMismatch, msgProtocolMismatch)
}

func sourceIPMismatch(ip string) *answer.Error {
	return answer.New(http.StatusForbidden, codeSourceIPMismatch, msgSourceIPMismatchPrefix+ip+".")
}

func noAuthenticationInformation() *answer.Error {
	return answer.New(http.StatusUnauthorized, codeNoAuthenticationInfo, msgNoAuthenticationInfo)
}

func invalidAuthenticationInfo() *answer.Error {
	return answer.New(http.StatusBadRequest, codeInvalidAuthInfo, msgInvalidAuthInfo)
}

func invalidQueryParameter() *answer.Error {
	return answer.New(http.StatusBadRequest, codeInvalidQueryParameter, msgInvalidQueryParameter)
}
