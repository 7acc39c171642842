package emulator_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator"
)

// versionProbe sends an anonymous GET to a service's URL with
// x-ms-version v ("" sends none) and returns the answer's status, error
// code (the Table service's JSON body or x-ms-error-code), its
// x-ms-version and its body.
func versionProbe(t *testing.T, url, v string) (status int, code, version, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v != "" {
		req.Header.Set("x-ms-version", v)
	}
	req.Header.Set("Accept", "application/json;odata=nometadata")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code = resp.Header.Get("x-ms-error-code")
	if code == "" {
		var e struct {
			OData struct{ Code string } `json:"odata.error"`
		}
		json.Unmarshal(b, &e)
		code = e.OData.Code
	}
	return resp.StatusCode, code, resp.Header.Get("x-ms-version"), string(b)
}

// TestAPIVersion: a version Azure has not published is refused as Azure
// refuses it (400 InvalidHeaderValue naming x-ms-version and the value,
// neither x-ms-version nor x-ms-error-code in the headers), before
// authentication; every version the
// clients tablekit is tested with send passes on to authentication (an
// anonymous request: 401); SkipAPIVersionCheck serves any.
func TestAPIVersion(t *testing.T) {
	em := emulator.StartTB(t, nil)
	urls := map[string]string{
		"table": em.TableURL + "/Tables",
		"queue": em.QueueURL + "?comp=list",
		"blob":  em.BlobURL + "?comp=list",
	}
	for svc, url := range urls {
		for _, v := range []string{"2099-01-01", "junk", "2026-10-07", "2019-02-03"} {
			status, code, echoed, body := versionProbe(t, url, v)
			if status != http.StatusBadRequest || code != "InvalidHeaderValue" && !strings.Contains(body, "<Code>InvalidHeaderValue</Code>") || echoed != "" {
				t.Errorf("%s, x-ms-version %q: %d %s, x-ms-version %q; want 400 InvalidHeaderValue, none", svc, v, status, code, echoed)
			}
			if svc != "table" && (!strings.Contains(body, "<HeaderName>x-ms-version</HeaderName><HeaderValue>"+v+"</HeaderValue>") || strings.Contains(code, "InvalidHeaderValue")) {
				t.Errorf("%s, x-ms-version %q: body %s, x-ms-error-code %q; want the header and value named in the body, no x-ms-error-code", svc, v, body, code)
			}
		}
		// aztables, tablekit and @azure/data-tables 13.3.2; azqueue 1.0.1;
		// azblob 1.6.4; @azure/storage-queue 12.32.0; @azure/storage-blob
		// 12.34.0; Debian's azure-data-tables 12.4.2, azure-storage-queue
		// 12.6.0b1, azure-storage-blob 12.15.0b1; the Go SDK's recordings
		// (2018-03-28, 2023-11-03); no header (anonymous).
		for _, v := range []string{"2019-02-02", "2024-08-04", "2026-02-06", "2026-04-06", "2026-06-06", "2026-10-06",
			"2021-02-12", "2021-12-02", "2018-03-28", "2023-11-03", ""} {
			status, code, echoed, _ := versionProbe(t, url, v)
			if status != http.StatusUnauthorized || echoed != v {
				t.Errorf("%s, x-ms-version %q: %d %s, x-ms-version %q; want 401 (authentication, past the version check), the version echoed", svc, v, status, code, echoed)
			}
		}
	}

	skip := emulator.StartTB(t, &emulator.Options{SkipAPIVersionCheck: true})
	for _, url := range []string{skip.TableURL + "/Tables", skip.QueueURL + "?comp=list", skip.BlobURL + "?comp=list"} {
		if status, code, echoed, _ := versionProbe(t, url, "2099-01-01"); status != http.StatusUnauthorized || echoed != "2099-01-01" {
			t.Errorf("SkipAPIVersionCheck, %s: %d %s, x-ms-version %q; want 401, echoed", url, status, code, echoed)
		}
	}
}
