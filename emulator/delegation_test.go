package emulator_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	blobservice "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/tablekit/tablekit/emulator"
)

// secondKey is the key of the second account the delegation tests serve.
const secondKey = "c2Vjb25kLWFjY291bnQta2V5LWZvci10ZXN0cy1vbmx5LTEyMzQ1Njc4OTA="

// delegationEmulator serves the development account and "second" over
// HTTPS with bearer tokens, in memory or in location (dir non-empty).
func delegationEmulator(t *testing.T, dir string) *emulator.Instance {
	t.Helper()
	return emulator.StartTB(t, &emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic, Location: dir,
		Accounts: []emulator.Account{{Name: emulator.DevAccountName, Keys: []string{emulator.DevAccountKey}}, {Name: "second", Keys: []string{secondKey}}}})
}

// blobURLOf is the Blob endpoint of account on em.
func blobURLOf(em *emulator.Instance, account string) string {
	return strings.TrimSuffix(em.BlobURL, "/"+em.AccountName) + "/" + account
}

// bearerBlob is an azblob client of account on em, authorized by a
// bearer token.
func bearerBlob(t *testing.T, em *emulator.Instance, account string) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClient(blobURLOf(em, account), validToken, &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: em.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sasBlobClient is an azblob client of the blob URL u, authorized by the
// SAS in it.
func sasBlobClient(t *testing.T, em *emulator.Instance, u string) *blob.Client {
	t.Helper()
	c, err := blob.NewClientWithNoCredential(u, &blob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: em.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// delegationCredential gets a user delegation key for account from em
// with azblob's GetUserDelegationCredential. azblob names the key's
// account after its URL's first host label, as on Azure
// (ACCOUNT.blob.core.windows.net); so the client's URL names the account
// in its host as well as its path, and its transport dials em's Blob
// port whatever the host.
func delegationCredential(t *testing.T, em *emulator.Instance, account string, start, expiry time.Time) (*blobservice.UserDelegationCredential, error) {
	t.Helper()
	u, err := url.Parse(em.BlobURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, u.Host)
		},
		TLSClientConfig: &tls.Config{RootCAs: em.RootCAs, ServerName: "localhost"},
	}
	t.Cleanup(tr.CloseIdleConnections)
	svc, err := blobservice.NewClient("https://"+account+".blob.example/"+account, validToken, &blobservice.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: tr}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	info := blobservice.KeyInfo{Expiry: to.Ptr(expiry.UTC().Format(sas.TimeFormat))}
	if !start.IsZero() {
		info.Start = to.Ptr(start.UTC().Format(sas.TimeFormat))
	}
	return svc.GetUserDelegationCredential(context.Background(), info, nil)
}

// helloBlob makes the container box of em's first account, holding the
// blob a ("hello"), through a bearer token, and returns the client.
func helloBlob(t *testing.T, em *emulator.Instance) *azblob.Client {
	t.Helper()
	ctx := context.Background()
	c := bearerBlob(t, em, em.AccountName)
	if _, err := c.CreateContainer(ctx, "box", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadBuffer(ctx, "box", "a", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// hourKey gets a user delegation key from em (rawDelegationKey, version
// 2021-12-02) valid from a minute before em's time, to the second, to an
// hour after; it returns the key and that time.
func hourKey(t *testing.T, em *emulator.Instance) (userDelegationKeyXML, time.Time) {
	t.Helper()
	now := em.Now().UTC().Truncate(time.Second)
	status, code, k := rawDelegationKey(t, em, bearerHeader(t), "2021-12-02",
		"<KeyInfo><Start>"+now.Add(-time.Minute).Format(time.RFC3339)+"</Start><Expiry>"+now.Add(time.Hour).Format(time.RFC3339)+"</Expiry></KeyInfo>")
	if status != http.StatusOK {
		t.Fatalf("Get User Delegation Key: %d %s", status, code)
	}
	return k, now
}

// userDelegationKeyXML is Get User Delegation Key's answer.
type userDelegationKeyXML struct {
	SignedOid, SignedTid, SignedStart, SignedExpiry, SignedService, SignedVersion, Value string
}

// rawDelegationKey asks em for a user delegation key with a request of
// its own (Authorization, x-ms-version, body as given) and returns the
// answer's status, error code and key.
func rawDelegationKey(t *testing.T, em *emulator.Instance, authorization, version, body string) (int, string, userDelegationKeyXML) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, em.BlobURL+"/?restype=service&comp=userdelegationkey", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-version", version)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := em.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var k userDelegationKeyXML
	if resp.StatusCode == http.StatusOK {
		if err := xml.Unmarshal(b, &k); err != nil {
			t.Fatalf("the key's XML: %v: %s", err, b)
		}
	}
	return resp.StatusCode, resp.Header.Get("x-ms-error-code"), k
}

func bearerHeader(t *testing.T) string {
	t.Helper()
	tok, err := validToken.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + tok.Token
}

// TestGetUserDelegationKey: a bearer token gets a key naming its oid and
// tid, the window asked for to the second, service b and the request's
// version, whose value is the same for the same fields (another emulator
// serving the same account agrees); Shared Key and SAS are refused, as
// are windows ending more than seven days ahead.
func TestGetUserDelegationKey(t *testing.T) {
	em := delegationEmulator(t, "")
	now := em.Now().UTC().Truncate(time.Second)
	body := "<KeyInfo><Start>" + now.Format(time.RFC3339) + "</Start><Expiry>" + now.Add(time.Hour).Format(time.RFC3339) + "</Expiry></KeyInfo>"
	status, code, k := rawDelegationKey(t, em, bearerHeader(t), "2021-12-02", body)
	if status != http.StatusOK {
		t.Fatalf("Get User Delegation Key: %d %s", status, code)
	}
	want := userDelegationKeyXML{SignedOid: "11059fcc-5514-4800-b5f8-49808b9cfab6", SignedTid: "72f988bf-86f1-41af-91ab-2d7cd011db47",
		SignedStart: now.Format(time.RFC3339), SignedExpiry: now.Add(time.Hour).Format(time.RFC3339), SignedService: "b", SignedVersion: "2021-12-02", Value: k.Value}
	if raw, err := base64.StdEncoding.DecodeString(k.Value); k != want || err != nil || len(raw) != sha256.Size {
		t.Errorf("key %+v, want %+v with a 32-byte value", k, want)
	}
	if _, _, again := rawDelegationKey(t, em, bearerHeader(t), "2021-12-02", body); again != k {
		t.Errorf("the same fields gave another key: %+v, then %+v", k, again)
	}
	if _, _, other := rawDelegationKey(t, delegationEmulator(t, ""), bearerHeader(t), "2021-12-02", body); other != k {
		t.Errorf("another emulator serving the account gave another key: %+v, then %+v", k, other)
	}
	if strings.Contains(k.Value, emulator.DevAccountKey[:12]) {
		t.Errorf("the key's value shows the account key")
	}

	sharedKey, err := azblob.NewSharedKeyCredential(em.AccountName, em.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	byKey, err := blobservice.NewClientWithSharedKeyCredential(em.BlobURL, sharedKey, &blobservice.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: em.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = byKey.GetUserDelegationCredential(context.Background(), blobservice.KeyInfo{Start: to.Ptr(now.Format(sas.TimeFormat)), Expiry: to.Ptr(now.Add(time.Hour).Format(sas.TimeFormat))}, nil)
	wantStatus(t, "Shared Key", err, http.StatusForbidden, "AuthenticationFailed", "Only authentication scheme Bearer is supported")
	accountSAS, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPS, ExpiryTime: now.Add(time.Hour),
		Permissions: (&sas.AccountPermissions{Read: true, Write: true}).String(), ResourceTypes: (&sas.AccountResourceTypes{Service: true}).String()}.SignWithSharedKey(sharedKey)
	if err != nil {
		t.Fatal(err)
	}
	bySAS, err := blobservice.NewClientWithNoCredential(em.BlobURL+"/?"+accountSAS.Encode(), &blobservice.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: em.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bySAS.GetUserDelegationCredential(context.Background(), blobservice.KeyInfo{Start: to.Ptr(now.Format(sas.TimeFormat)), Expiry: to.Ptr(now.Add(time.Hour).Format(sas.TimeFormat))}, nil)
	wantStatus(t, "an account SAS", err, http.StatusForbidden, "AuthenticationFailed", "Only authentication scheme Bearer is supported")

	for _, c := range []struct {
		name, body   string
		status       int
		code         string
		wantValueSet bool
	}{
		{"no Start", "<KeyInfo><Expiry>" + now.Add(time.Hour).Format(time.RFC3339) + "</Expiry></KeyInfo>", 200, "", true},
		{"Expiry 7 days ahead less a minute", "<KeyInfo><Expiry>" + now.Add(7*24*time.Hour-time.Minute).Format(time.RFC3339) + "</Expiry></KeyInfo>", 200, "", true},
		{"Expiry 7 days and a minute ahead", "<KeyInfo><Expiry>" + now.Add(7*24*time.Hour+time.Minute).Format(time.RFC3339) + "</Expiry></KeyInfo>", 400, "InvalidXmlNodeValue", false},
		{"Start 8 days ahead", "<KeyInfo><Start>" + now.Add(8*24*time.Hour).Format(time.RFC3339) + "</Start><Expiry>" + now.Add(time.Hour).Format(time.RFC3339) + "</Expiry></KeyInfo>", 400, "InvalidXmlNodeValue", false},
		{"Expiry before Start", "<KeyInfo><Start>" + now.Add(2*time.Hour).Format(time.RFC3339) + "</Start><Expiry>" + now.Add(time.Hour).Format(time.RFC3339) + "</Expiry></KeyInfo>", 400, "InvalidXmlNodeValue", false},
		{"Expiry not a time", "<KeyInfo><Expiry>tomorrow</Expiry></KeyInfo>", 400, "InvalidXmlNodeValue", false},
		{"no Expiry", "<KeyInfo><Start>" + now.Format(time.RFC3339) + "</Start></KeyInfo>", 400, "MissingRequiredXmlNode", false},
		{"not XML", "KeyInfo", 400, "InvalidXmlDocument", false},
	} {
		status, code, k := rawDelegationKey(t, em, bearerHeader(t), "2025-01-05", c.body)
		if status != c.status || code != c.code || (k.Value != "") != c.wantValueSet {
			t.Errorf("%s: %d %q (value %q), want %d %q", c.name, status, code, k.Value, c.status, c.code)
		}
	}
}

// wantStatus fails t unless err is the service's answer status with
// code and, when detail is set, a body holding it.
func wantStatus(t *testing.T, what string, err error, status int, code, detail string) {
	t.Helper()
	var re *azcore.ResponseError
	if err == nil || !errors.As(err, &re) {
		t.Fatalf("%s: %v, want %d %s", what, err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code || !strings.Contains(err.Error(), detail) {
		t.Fatalf("%s: %d %s, want %d %s (%s): %v", what, re.StatusCode, re.ErrorCode, status, code, detail, err)
	}
}

// TestUserDelegationSAS: azblob signs a user delegation SAS (version
// 2026-02-06's layout) with a key from the emulator; it reads what it
// allows and nothing else, and holds only while the key and the SAS are
// both valid on the emulator's clock.
func TestUserDelegationSAS(t *testing.T) {
	ctx := context.Background()
	em := delegationEmulator(t, "")
	c := helloBlob(t, em)
	if _, err := c.UploadBuffer(ctx, "box", "b", []byte("other"), nil); err != nil {
		t.Fatal(err)
	}
	now := em.Now()
	cred, err := delegationCredential(t, em, em.AccountName, now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	sign := func(v sas.BlobSignatureValues) string {
		t.Helper()
		v.Protocol, v.ContainerName = sas.ProtocolHTTPS, "box"
		if v.ExpiryTime.IsZero() {
			v.ExpiryTime = now.Add(3 * time.Hour)
		}
		if v.Permissions == "" {
			v.Permissions = (&sas.BlobPermissions{Read: true}).String()
		}
		qp, err := v.SignWithUserDelegation(cred)
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}
	readBlob := func(name, query string) error {
		_, err := sasBlobClient(t, em, em.BlobURL+"/box/"+name+"?"+query).DownloadBuffer(ctx, make([]byte, 5), nil)
		return err
	}
	read := sign(sas.BlobSignatureValues{BlobName: "a"})
	if err := readBlob("a", read); err != nil {
		t.Fatalf("a read through the SAS: %v", err)
	}
	_, err = sasBlobClient(t, em, em.BlobURL+"/box/a?"+read).SetMetadata(ctx, map[string]*string{"x": to.Ptr("1")}, nil)
	wantStatus(t, "a write through a read SAS", err, http.StatusForbidden, "AuthorizationPermissionMismatch", "")
	wantStatus(t, "another blob", readBlob("b", read), http.StatusForbidden, "AuthenticationFailed", "")
	wantStatus(t, "a changed skoid", readBlob("a", strings.Replace(read, "skoid=", "skoid=0", 1)), http.StatusForbidden, "AuthenticationFailed", "")

	list := sign(sas.BlobSignatureValues{Permissions: (&sas.ContainerPermissions{Read: true, List: true}).String()})
	cc, err := container.NewClientWithNoCredential(em.BlobURL+"/box?"+list, &container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: em.HTTPClient()}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := cc.NewListBlobsFlatPager(nil).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 2 {
		t.Fatalf("a container SAS's listing: %v (%d blobs)", err, len(page.Segment.BlobItems))
	}
	if err := readBlob("b", list); err != nil {
		t.Errorf("a container SAS reads its blobs: %v", err)
	}

	wantStatus(t, "saoid on an account without a hierarchical namespace",
		readBlob("a", sign(sas.BlobSignatureValues{BlobName: "a", AuthorizedObjectID: "11059fcc-5514-4800-b5f8-49808b9cfab6"})), http.StatusForbidden, "AuthorizationFailure", "")
	wantStatus(t, "sduoid", readBlob("a", sign(sas.BlobSignatureValues{BlobName: "a", SignedDelegatedUserObjectID: "11059fcc-5514-4800-b5f8-49808b9cfab6"})), http.StatusNotImplemented, "NotImplemented", "")
	wantStatus(t, "si", readBlob("a", read+"&si=policy1"), http.StatusForbidden, "AuthenticationFailed", "")

	// A key that starts in an hour: refused until then, on the
	// emulator's clock.
	later, err := delegationCredential(t, em, em.AccountName, now.Add(time.Hour), now.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPS, ExpiryTime: now.Add(3 * time.Hour), ContainerName: "box", BlobName: "a",
		Permissions: (&sas.BlobPermissions{Read: true}).String()}.SignWithUserDelegation(later)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "a key not yet valid", readBlob("a", qp.Encode()), http.StatusForbidden, "AuthenticationFailed", "")
	em.Advance(time.Hour + time.Second)
	if err := readBlob("a", qp.Encode()); err != nil {
		t.Errorf("the key once valid: %v", err)
	}
	wantStatus(t, "a key expired, its SAS not", readBlob("a", read), http.StatusForbidden, "AuthenticationFailed", "")
	em.Advance(time.Hour)
	wantStatus(t, "both keys expired", readBlob("a", qp.Encode()), http.StatusForbidden, "AuthenticationFailed", "")
}

// udLayouts are the strings to sign of a user delegation SAS by version,
// as the JavaScript SDK's generateBlobSASQueryParametersUDK20181109,
// ...UDK20200210, ...UDK20201206 and Azurite's
// generateBlobSASBlobSASSignatureWithUDK20260406 write them (fields by
// their query parameter names; "resource" is the canonicalized resource).
var udLayouts = map[string][]string{
	"2018-11-09": {"sp", "st", "se", "resource", "skoid", "sktid", "skt", "ske", "sks", "skv", "sip", "spr", "sv", "sr", "snapshot", "rscc", "rscd", "rsce", "rscl", "rsct"},
	"2020-02-10": {"sp", "st", "se", "resource", "skoid", "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid", "sip", "spr", "sv", "sr", "snapshot", "rscc", "rscd", "rsce", "rscl", "rsct"},
	"2020-12-06": {"sp", "st", "se", "resource", "skoid", "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid", "sip", "spr", "sv", "sr", "snapshot", "ses", "rscc", "rscd", "rsce", "rscl", "rsct"},
	"2026-04-06": {"sp", "st", "se", "resource", "skoid", "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid", "skdutid", "sduoid", "sip", "spr", "sv", "sr", "snapshot", "ses", "srh", "srq", "rscc", "rscd", "rsce", "rscl", "rsct"},
}

// TestUserDelegationSASLayouts signs a user delegation SAS in each
// version's layout (azblob signs 2025-07-05's alone) with a key from the
// emulator: each reads the blob, with a correlation id and a response
// header override signed in, and a SAS signed in another version's layout
// is refused.
func TestUserDelegationSASLayouts(t *testing.T) {
	ctx := context.Background()
	em := delegationEmulator(t, "")
	helloBlob(t, em)
	k, now := hourKey(t, em)
	key, err := base64.StdEncoding.DecodeString(k.Value)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(layout, sv string, extra map[string]string) string {
		v := map[string]string{"sp": "r", "se": now.Add(time.Hour).Format(time.RFC3339), "resource": "/blob/" + em.AccountName + "/box/a",
			"skoid": k.SignedOid, "sktid": k.SignedTid, "skt": k.SignedStart, "ske": k.SignedExpiry, "sks": k.SignedService, "skv": k.SignedVersion,
			"sv": sv, "sr": "b", "rsct": "text/x-test"}
		if sv >= "2020-02-10" {
			v["scid"] = "3a1f6a0c-0000-4000-8000-000000000001"
		}
		for f, x := range extra {
			v[f] = x
		}
		var b strings.Builder
		q := url.Values{}
		for i, f := range udLayouts[layout] {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(v[f])
			if v[f] != "" && f != "resource" {
				q.Set(f, v[f])
			}
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(b.String()))
		q.Set("sig", base64.StdEncoding.EncodeToString(m.Sum(nil)))
		return q.Encode()
	}
	for layout := range udLayouts {
		for _, sv := range []string{"2018-11-09", "2020-02-10", "2020-12-06", "2026-04-06"} {
			r, err := sasBlobClient(t, em, em.BlobURL+"/box/a?"+sign(layout, sv, nil)).DownloadStream(ctx, nil)
			if layout == sv {
				if err != nil {
					t.Errorf("sv %s in its own layout: %v", sv, err)
					continue
				}
				body, _ := io.ReadAll(r.Body)
				r.Body.Close()
				if !bytes.Equal(body, []byte("hello")) || r.ContentType == nil || *r.ContentType != "text/x-test" {
					t.Errorf("sv %s: %q, Content-Type %v", sv, body, r.ContentType)
				}
			} else if err == nil {
				t.Errorf("sv %s signed in %s's layout was accepted", sv, layout)
			}
		}
	}
	// Fields the emulator refuses once the signature holds: each signed
	// in its place, or the answer would be AuthenticationFailed.
	const oid = "11059fcc-5514-4800-b5f8-49808b9cfab6"
	for _, c := range []struct {
		sv, field string
		status    int
		code      string
	}{
		{"2020-02-10", "saoid", http.StatusForbidden, "AuthorizationFailure"},
		{"2020-02-10", "suoid", http.StatusForbidden, "AuthorizationFailure"},
		{"2026-04-06", "saoid", http.StatusForbidden, "AuthorizationFailure"},
		{"2026-04-06", "suoid", http.StatusForbidden, "AuthorizationFailure"},
		{"2026-04-06", "sduoid", http.StatusNotImplemented, "NotImplemented"},
		{"2026-04-06", "srh", http.StatusNotImplemented, "NotImplemented"},
		{"2026-04-06", "srq", http.StatusNotImplemented, "NotImplemented"},
	} {
		_, err := sasBlobClient(t, em, em.BlobURL+"/box/a?"+sign(c.sv, c.sv, map[string]string{c.field: oid})).DownloadStream(ctx, nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != c.status || re.ErrorCode != c.code {
			t.Errorf("sv %s with %s: %v, want %d %s", c.sv, c.field, err, c.status, c.code)
		}
	}
	// st, signed in its place: a start that can be read holds, one that
	// cannot is refused.
	for st, ok := range map[string]bool{now.Add(-time.Minute).Format(time.RFC3339): true, "yesterday": false} {
		_, err := sasBlobClient(t, em, em.BlobURL+"/box/a?"+sign("2020-12-06", "2020-12-06", map[string]string{"st": st})).DownloadStream(ctx, nil)
		var re *azcore.ResponseError
		if ok && err != nil || !ok && (!errors.As(err, &re) || re.StatusCode != http.StatusForbidden || re.ErrorCode != "AuthenticationFailed") {
			t.Errorf("st=%s: %v, want it %s", st, err, map[bool]string{true: "read", false: "refused 403 AuthenticationFailed"}[ok])
		}
	}
}

// TestCopyBetweenAccounts: Copy Blob, Copy Blob From URL, Put Blob From
// URL and Put Block From URL whose source is in another account of the
// emulator, through a service SAS, a user delegation SAS, a bearer token
// in x-ms-copy-source-authorization or a public container; a private
// source without any is refused as Azure refuses it. With a location the
// copies, and the user delegation SAS, are there after a restart.
func TestCopyBetweenAccounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	em := delegationEmulator(t, dir)
	src, dst := bearerBlob(t, em, "second"), bearerBlob(t, em, em.AccountName)
	for _, c := range []struct {
		client *azblob.Client
		name   string
		access *container.PublicAccessType
	}{{src, "private", nil}, {src, "public", to.Ptr(container.PublicAccessTypeBlob)}, {dst, "copies", nil}} {
		if _, err := c.client.CreateContainer(ctx, c.name, &container.CreateOptions{Access: c.access}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"private", "public"} {
		if _, err := src.UploadBuffer(ctx, c, "a", []byte("from "+c), nil); err != nil {
			t.Fatal(err)
		}
	}
	priv := src.ServiceClient().NewContainerClient("private").NewBlobClient("a")
	secondKeyCred, err := azblob.NewSharedKeyCredential("second", secondKey)
	if err != nil {
		t.Fatal(err)
	}
	serviceSAS, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPS, ExpiryTime: em.Now().Add(time.Hour), ContainerName: "private", BlobName: "a",
		Permissions: (&sas.BlobPermissions{Read: true}).String()}.SignWithSharedKey(secondKeyCred)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := delegationCredential(t, em, "second", em.Now().Add(-time.Minute), em.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	udSAS, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPS, ExpiryTime: em.Now().Add(time.Hour), ContainerName: "private", BlobName: "a",
		Permissions: (&sas.BlobPermissions{Read: true}).String()}.SignWithUserDelegation(cred)
	if err != nil {
		t.Fatal(err)
	}
	privURL, pubURL := priv.URL(), src.ServiceClient().NewContainerClient("public").NewBlobClient("a").URL()
	byServiceSAS, byUDSAS := privURL+"?"+serviceSAS.Encode(), privURL+"?"+udSAS.Encode()
	token := strings.TrimPrefix(bearerHeader(t), "Bearer ")
	out := dst.ServiceClient().NewContainerClient("copies")

	_, err = out.NewBlobClient("x").StartCopyFromURL(ctx, privURL, nil)
	wantStatus(t, "Copy Blob from another account's private container", err, http.StatusNotFound, "CannotVerifyCopySource", "")
	_, err = out.NewBlockBlobClient("x").UploadBlobFromURL(ctx, privURL, nil)
	wantStatus(t, "Put Blob From URL from another account's private container", err, http.StatusUnauthorized, "CannotVerifyCopySource", "")

	want := map[string]string{}
	copyAs := func(name, what string, do func(*blob.Client) error, from string) {
		t.Helper()
		if err := do(out.NewBlobClient(name)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want[name] = "from " + from
	}
	copyAs("copy-sas", "Copy Blob, service SAS", func(b *blob.Client) error { _, err := b.StartCopyFromURL(ctx, byServiceSAS, nil); return err }, "private")
	copyAs("copy-udsas", "Copy Blob, user delegation SAS", func(b *blob.Client) error { _, err := b.StartCopyFromURL(ctx, byUDSAS, nil); return err }, "private")
	copyAs("copy-public", "Copy Blob, public source", func(b *blob.Client) error { _, err := b.StartCopyFromURL(ctx, pubURL, nil); return err }, "public")
	copyAs("sync-udsas", "Copy Blob From URL, user delegation SAS", func(b *blob.Client) error { _, err := b.CopyFromURL(ctx, byUDSAS, nil); return err }, "private")
	copyAs("put-sas", "Put Blob From URL, service SAS", func(b *blob.Client) error {
		_, err := out.NewBlockBlobClient("put-sas").UploadBlobFromURL(ctx, byServiceSAS, nil)
		return err
	}, "private")
	copyAs("put-bearer", "Put Blob From URL, x-ms-copy-source-authorization", func(b *blob.Client) error {
		_, err := out.NewBlockBlobClient("put-bearer").UploadBlobFromURL(ctx, privURL, &blockblob.UploadBlobFromURLOptions{CopySourceAuthorization: to.Ptr("Bearer " + token)})
		return err
	}, "private")
	copyAs("block-udsas", "Put Block From URL, user delegation SAS", func(b *blob.Client) error {
		bb := out.NewBlockBlobClient("block-udsas")
		if _, err := bb.StageBlockFromURL(ctx, "YmxvY2sx", byUDSAS, nil); err != nil {
			return err
		}
		_, err := bb.CommitBlockList(ctx, []string{"YmxvY2sx"}, nil)
		return err
	}, "private")
	_, err = out.NewBlockBlobClient("x").UploadBlobFromURL(ctx, privURL, &blockblob.UploadBlobFromURLOptions{CopySourceAuthorization: to.Ptr("Bearer not-a-token")})
	wantStatus(t, "x-ms-copy-source-authorization with a token that is not one", err, http.StatusUnauthorized, "CannotVerifyCopySource", "")

	check := func(em *emulator.Instance, when string) {
		t.Helper()
		c := bearerBlob(t, em, em.AccountName)
		for name, body := range want {
			buf := make([]byte, len(body))
			if _, err := c.DownloadBuffer(ctx, "copies", name, buf, nil); err != nil || string(buf) != body {
				t.Errorf("%s: %s reads %q, %v; want %q", when, name, buf, err, body)
			}
		}
	}
	check(em, "after the copies")
	if err := em.Stop(); err != nil {
		t.Fatal(err)
	}
	again := delegationEmulator(t, dir)
	check(again, "after a restart")
	// The key is derived from the account key and its fields: the SAS
	// made before the restart reads the source after it.
	u := strings.Replace(byUDSAS, em.BlobURL[:strings.LastIndex(em.BlobURL, "/")], again.BlobURL[:strings.LastIndex(again.BlobURL, "/")], 1)
	if _, err := sasBlobClient(t, again, u).DownloadBuffer(ctx, make([]byte, 12), nil); err != nil {
		t.Errorf("the user delegation SAS after a restart: %v", err)
	}
}

// TestDelegationLogsNoSecret: the request log and the debug log name no
// user delegation key, no SAS signature (the request's or the copy
// source's) and no bearer token, whether the requests succeed or are
// refused, and no refusal's body quotes them.
func TestDelegationLogsNoSecret(t *testing.T) {
	var lg, debug syncBuffer
	em := emulator.StartTB(t, &emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic, Log: &lg, DebugLog: &debug})
	helloBlob(t, em)
	k, now := hourKey(t, em)
	cred, err := delegationCredential(t, em, em.AccountName, now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPS, ExpiryTime: now.Add(time.Hour), ContainerName: "box", BlobName: "a",
		Permissions: (&sas.BlobPermissions{Read: true}).String()}.SignWithUserDelegation(cred)
	if err != nil {
		t.Fatal(err)
	}
	src := em.BlobURL + "/box/a?" + qp.Encode()
	var bodies []string
	for _, r := range []struct {
		method, url string
		header      map[string]string
	}{
		{http.MethodGet, src, nil},
		{http.MethodPut, src, nil}, // refused: a read SAS
		{http.MethodGet, em.BlobURL + "/box/a?" + strings.Replace(qp.Encode(), "skoid=", "skoid=0", 1), nil}, // refused: the signature
		{http.MethodPut, em.BlobURL + "/box/copy", map[string]string{"x-ms-copy-source": src, "x-ms-blob-type": "BlockBlob", "Authorization": bearerHeader(t)}},
		{http.MethodPut, em.BlobURL + "/box/copy2", map[string]string{"x-ms-copy-source": em.BlobURL + "/box/a",
			"x-ms-copy-source-authorization": "Bearer not.a-token", "x-ms-blob-type": "BlockBlob", "Authorization": bearerHeader(t)}}, // refused
	} {
		req, err := http.NewRequest(r.method, r.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-version", "2025-01-05")
		for h, v := range r.header {
			req.Header.Set(h, v)
		}
		resp, err := em.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies = append(bodies, string(b))
	}
	token := strings.TrimPrefix(bearerHeader(t), "Bearer ")
	secrets := map[string]string{"the key's value": k.Value, "the SAS's signature": qp.Signature(),
		"the token's payload": strings.Split(token, ".")[1], "the account key": em.AccountKey}
	for what, secret := range secrets {
		for name, text := range map[string]string{"request log": lg.String(), "debug log": debug.String(), "answers": strings.Join(bodies, "\n")} {
			if strings.Contains(text, secret) || strings.Contains(text, url.QueryEscape(secret)) {
				t.Errorf("the %s holds %s", name, what)
			}
		}
	}
	if !strings.Contains(debug.String(), "X-Ms-Copy-Source-Authorization: Bearer REDACTED") || !strings.Contains(debug.String(), "sig=REDACTED") {
		t.Errorf("the debug log does not show the copy source's credentials redacted:\n%s", debug.String())
	}
}
