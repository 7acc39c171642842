package queues_test

import (
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/tier"
)

// errorElements sends method to url (a POST with a message) and returns the answer's
// status and the elements of its XML error after Code and Message, as
// "Name=Value".
func errorElements(t *testing.T, method, url string) (int, []string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("<QueueMessage><MessageText>x</MessageText></QueueMessage>")
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2018-03-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Elements []struct {
			XMLName xml.Name
			Value   string `xml:",chardata"`
		} `xml:",any"`
	}
	if err := xml.Unmarshal(answer, &e); err != nil {
		t.Fatalf("%s %s: %d, body %q: %v", method, url, resp.StatusCode, answer, err)
	}
	var out []string
	for _, el := range e.Elements {
		if el.XMLName.Local != "Code" && el.XMLName.Local != "Message" {
			out = append(out, el.XMLName.Local+"="+el.Value)
		}
	}
	return resp.StatusCode, out
}

// TestErrorDetails checks that an answer refusing a query parameter
// names it after Message as Azure does (a real session recorded the
// OutOfRangeQueryParameterValue of numofmessages=33, emulator's
// testdata) and as Azurite does for the same requests.
func TestErrorDetails(t *testing.T) {
	tier.Require(t, tier.Azurite)
	az := azurite.StartTB(t, nil)
	cases := []struct {
		method, path string
		want         []string
	}{
		{http.MethodGet, "/details/messages?numofmessages=33", []string{"QueryParameterName=numofmessages", "QueryParameterValue=33", "MinimumAllowed=1", "MaximumAllowed=32"}},
		{http.MethodGet, "/details/messages?visibilitytimeout=0", []string{"QueryParameterName=visibilitytimeout", "QueryParameterValue=0", "MinimumAllowed=1", "MaximumAllowed=604800"}},
		{http.MethodPost, "/details/messages?messagettl=0", []string{"QueryParameterName=messagettl", "QueryParameterValue=0", "Reason=Value must be greater than or equal to 1, or -1 to indicate an infinite TTL."}},
	}
	for _, target := range []struct{ name, url string }{{"emulator", server(t, nil)}, {"azurite", az.QueueURL}} {
		sc := client(t, target.url)
		if _, err := sc.NewQueueClient("details").Create(ctx, nil); err != nil {
			t.Fatalf("%s: create queue: %v", target.name, err)
		}
		for _, c := range cases {
			status, got := errorElements(t, c.method, target.url+c.path+sep(c.path)+sasQuery(t))
			if status != http.StatusBadRequest || strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("%s: %s %s: %d %q, want 400 %q", target.name, c.method, c.path, status, got, c.want)
			}
		}
	}
	// What Azurite answers otherwise (numofmessages=0 and maxresults=0:
	// 400 with no body; a period after the first Reason, which Azure's
	// answers recorded by the Azure SDK for JavaScript's tests do not
	// have) or not at all: the emulator still names the parameter, as
	// Azure does.
	url := server(t, nil)
	if _, err := client(t, url).NewQueueClient("details").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		want         []string
	}{
		{http.MethodGet, "/details/messages?numofmessages=0", []string{"QueryParameterName=numofmessages", "QueryParameterValue=0", "MinimumAllowed=1", "MaximumAllowed=32"}},
		{http.MethodGet, "/?comp=list&maxresults=0", []string{"QueryParameterName=maxresults", "QueryParameterValue=0", "MinimumAllowed=1", "MaximumAllowed=2147483647"}},
		{http.MethodGet, "/details/messages?numofmessages=many", []string{"QueryParameterName=numofmessages", "QueryParameterValue=many"}},
		{http.MethodDelete, "/details/messages/0f0a9d8e-9b6c-4c55-8d53-1c8f2a1e1b11", []string{"QueryParameterName=popreceipt"}},
		{http.MethodPost, "/details/messages?visibilitytimeout=10&messagettl=10", []string{"QueryParameterName=visibilitytimeout", "QueryParameterValue=10", "Reason=messagettl must be greater than visibilitytimeout"}},
		{http.MethodDelete, "/details/messages/0f0a9d8e-9b6c-4c55-8d53-1c8f2a1e1b11?popreceipt=invalid", []string{"QueryParameterName=popreceipt", "QueryParameterValue=invalid", "Reason=Invalid pop receipt format"}},
		{http.MethodGet, "/details?comp=nosuch", []string{"QueryParameterName=comp", "QueryParameterValue=nosuch"}},
	} {
		status, got := errorElements(t, c.method, url+c.path+sep(c.path)+sasQuery(t))
		if status != http.StatusBadRequest || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("emulator: %s %s: %d %q, want 400 %q", c.method, c.path, status, got, c.want)
		}
	}
}

// sep is the separator before a query parameter appended to path.
func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// TestNoCredentials checks Azure's answer to a request with neither a
// signature nor a SAS: 401 NoAuthenticationInformation with the
// WWW-Authenticate challenge.
func TestNoCredentials(t *testing.T) {
	url := server(t, nil)
	for _, path := range []string{"/?comp=list", "/qqq?comp=metadata", "/qqq/messages"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("x-ms-error-code") != "NoAuthenticationInformation" || resp.Header.Get("WWW-Authenticate") != auth.WWWAuthenticate {
			t.Errorf("GET %s: %d %s, WWW-Authenticate %q; want 401 NoAuthenticationInformation with %q", path, resp.StatusCode, resp.Header.Get("x-ms-error-code"), resp.Header.Get("WWW-Authenticate"), auth.WWWAuthenticate)
		}
	}
}
