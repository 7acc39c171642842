package auth_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// jwt is an unsigned token with payload p.
func jwt(p string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(p)) + "."
}

// Bearer tokens are checked as Azurite's --oauth basic checks them, and
// refused with Azure's answers.
func TestBearer(t *testing.T) {
	now := time.Now().Unix()
	n := func(d time.Duration) string { return strconv.FormatInt(now+int64(d/time.Second), 10) }
	claims := func(aud, iss, nbf, exp string) string {
		return `{"aud":"` + aud + `","iss":"` + iss + `","iat":` + n(-time.Hour) + `,"nbf":` + nbf + `,"exp":` + exp + `}`
	}
	const iss = "https://sts.windows.net/00000000-0000-0000-0000-000000000000/"
	ok := func(aud string) string { return jwt(claims(aud, iss, n(-time.Minute), n(time.Hour))) }
	for _, tc := range []struct {
		name    string
		svc     auth.Service
		token   string
		version string
		https   bool
		status  int
		code    string
		detail  string
	}{
		{"storage audience", auth.Blob, ok("https://storage.azure.com"), "2025-01-05", true, 0, "", ""},
		{"storage audience slash", auth.Queue, ok("https://storage.azure.com/"), "2018-03-28", true, 0, "", ""},
		{"application id", auth.Table, ok("e406a681-f3d4-42a8-90b6-c2b029497af1"), "2019-02-02", true, 0, "", ""},
		{"account endpoint", auth.Table, ok("https://" + account + ".table.core.windows.net"), "2019-02-02", true, 0, "", ""},
		{"china endpoint", auth.Blob, ok("https://" + account + ".blob.core.chinacloudapi.cn/"), "2025-01-05", true, 0, "", ""},
		{"other service's endpoint", auth.Queue, ok("https://" + account + ".blob.core.windows.net"), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Audience validation failed. Audience did not match."},
		{"other account", auth.Blob, ok("https://other.blob.core.windows.net"), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Audience validation failed. Audience did not match."},
		{"expired", auth.Blob, jwt(claims("https://storage.azure.com", iss, n(-2*time.Hour), n(-time.Second))), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Lifetime validation failed. The token is expired."},
		{"expired, old version", auth.Blob, jwt(claims("https://storage.azure.com", iss, n(-2*time.Hour), n(-time.Second))), "2019-07-07", true, 403, "AuthenticationFailed", "Lifetime validation failed. The token is expired."},
		{"expired table", auth.Table, jwt(claims("https://storage.azure.com", iss, n(-2*time.Hour), n(-time.Second))), "2019-02-02", true, 401, "InvalidAuthenticationInfo", "Lifetime validation failed. The token is expired."},
		{"not yet valid", auth.Queue, jwt(claims("https://storage.azure.com", iss, n(time.Minute), n(time.Hour))), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Lifetime validation failed. The token is not yet valid."},
		{"issuer", auth.Queue, jwt(claims("https://storage.azure.com", "https://login.example/", n(-time.Minute), n(time.Hour))), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Issuer validation failed. Issuer did not match."},
		{"no iat", auth.Blob, jwt(`{"aud":"https://storage.azure.com","iss":"` + iss + `","nbf":` + n(-time.Minute) + `,"exp":` + n(time.Hour) + `}`), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Authentication scheme Bearer is not supported."},
		{"string times", auth.Blob, jwt(`{"aud":"https://storage.azure.com","iss":"` + iss + `","iat":"1","nbf":"1","exp":"9999999999"}`), "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Authentication scheme Bearer is not supported."},
		{"not a JWT", auth.Blob, "opaque-token", "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Authentication scheme Bearer is not supported."},
		{"four parts", auth.Blob, ok("https://storage.azure.com") + ".x", "2025-01-05", true, 401, "InvalidAuthenticationInfo", "Authentication scheme Bearer is not supported."},
		{"plain HTTP", auth.Blob, ok("https://storage.azure.com"), "2025-01-05", false, 403, "AuthenticationFailed", "Authentication scheme Bearer is not allowed with HTTP."},
	} {
		a := auth.New(auth.Account{Name: account, Keys: [][]byte{devKey(t)}})
		a.EnableBearer(tc.https)
		r := httptest.NewRequest(http.MethodGet, "https://127.0.0.1/"+account+"/x", nil)
		r.Header.Set("Authorization", "Bearer "+tc.token)
		r.Header.Set("x-ms-version", tc.version)
		g, e := a.Authorize(r, auth.Operation{Service: tc.svc, ResourceType: 'c', Permission: 'w', Name: "x"})
		if tc.status == 0 {
			if e != nil || g == nil || g.SAS || g.KeyRange != nil {
				t.Errorf("%s: %v %+v, want the account's full access", tc.name, e, g)
			}
			continue
		}
		if e == nil {
			t.Errorf("%s: accepted, want %d %s", tc.name, tc.status, tc.code)
			continue
		}
		if e.Status != tc.status || e.Code != tc.code || len(e.Details) != 1 || e.Details[0].Name != "AuthenticationErrorDetail" || e.Details[0].Value != tc.detail {
			t.Errorf("%s: %d %s %+v, want %d %s %q", tc.name, e.Status, e.Code, e.Details, tc.status, tc.code, tc.detail)
		}
	}
	// Without EnableBearer a bearer token is a header of the wrong form.
	a := auth.New(auth.Account{Name: account, Keys: [][]byte{devKey(t)}})
	r := httptest.NewRequest(http.MethodGet, "https://127.0.0.1/"+account+"/x", nil)
	r.Header.Set("Authorization", "Bearer "+ok("https://storage.azure.com"))
	if _, e := a.Authorize(r, auth.Operation{Service: auth.Blob}); e == nil || e.Status != 400 || e.Code != "InvalidAuthenticationInfo" {
		t.Errorf("a bearer token without EnableBearer: %v, want 400 InvalidAuthenticationInfo", e)
	}
}
