package tables_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/tables"
)

// props returns n properties P0..Pn-1 as JSON members.
func props(n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"P%d":%s`, i, value)
	}
	return b.String()
}

func TestLimits(t *testing.T) {
	s := start(t, tables.Config{})
	s.table(t, "limits")
	big := strings.Repeat("x", 32*1024)
	for _, tc := range []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"ok", `{"PartitionKey":"p","RowKey":"ok"` + props(252, "1") + `}`, 201, ""},
		{"too many properties", `{"PartitionKey":"p","RowKey":"r"` + props(253, "1") + `}`, 400, "TooManyProperties"},
		{"string at the limit", `{"PartitionKey":"p","RowKey":"s1","S":"` + big + `"}`, 201, ""},
		{"string too long", `{"PartitionKey":"p","RowKey":"r","S":"` + big + `x"}`, 400, "PropertyValueTooLarge"},
		{"binary too long", `{"PartitionKey":"p","RowKey":"r","B@odata.type":"Edm.Binary","B":"` + base64.StdEncoding.EncodeToString(make([]byte, 64*1024+1)) + `"}`, 400, "PropertyValueTooLarge"},
		{"entity too large", `{"PartitionKey":"p","RowKey":"r"` + props(20, `"`+big+`"`) + `}`, 400, "EntityTooLarge"},
		{"name not an identifier", `{"PartitionKey":"p","RowKey":"r","1abc":1}`, 400, "PropertyNameInvalid"},
		{"name too long", `{"PartitionKey":"p","RowKey":"r","` + strings.Repeat("a", 256) + `":1}`, 400, "PropertyNameTooLong"},
		{"key with a slash", `{"PartitionKey":"p/q","RowKey":"r"}`, 400, "InvalidInput"},
		{"key too long", `{"PartitionKey":"` + strings.Repeat("k", 513) + `","RowKey":"r"}`, 400, "OutOfRangeInput"},
		{"no RowKey", `{"PartitionKey":"p"}`, 400, "PropertiesNeedValue"},
		{"DateTime out of range", `{"PartitionKey":"p","RowKey":"r","D@odata.type":"Edm.DateTime","D":"1600-01-01T00:00:00Z"}`, 400, "OutOfRangeInput"},
		{"not JSON", `{"PartitionKey":`, 400, "InvalidInput"},
	} {
		resp, body := s.raw(t, "POST", "limits", nil, []byte(tc.body))
		if resp.StatusCode != tc.status || errCode(body) != tc.code {
			t.Errorf("%s: %d %s, want %d %s: %.300s", tc.name, resp.StatusCode, errCode(body), tc.status, tc.code, body)
		}
	}
	// A merge that would take the entity over 252 properties.
	resp, body := s.raw(t, "MERGE", "limits(PartitionKey='p',RowKey='ok')", map[string]string{"If-Match": "*"}, []byte(`{"Extra":1}`))
	if resp.StatusCode != http.StatusBadRequest || errCode(body) != "TooManyProperties" {
		t.Errorf("merge over the limit: %d %s", resp.StatusCode, errCode(body))
	}
}

func TestFormatsAndPreferences(t *testing.T) {
	s := start(t, tables.Config{})
	s.table(t, "formats")
	// Prefer: return-no-content on insert: 204, Preference-Applied, ETag.
	resp, body := s.raw(t, "POST", "formats", map[string]string{"Prefer": "return-no-content"}, []byte(`{"PartitionKey":"p","RowKey":"r","L@odata.type":"Edm.Int64","L":"5","G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833"}`))
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Preference-Applied") != "return-no-content" || !etagForm.MatchString(resp.Header.Get("ETag")) || len(body) != 0 {
		t.Fatalf("insert with return-no-content: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if loc := resp.Header.Get("Location"); !strings.HasSuffix(loc, "/formats(PartitionKey='p',RowKey='r')") || resp.Header.Get("DataServiceId") != loc {
		t.Errorf("insert with return-no-content: Location %q, DataServiceId %q; want both the entity's URL", loc, resp.Header.Get("DataServiceId"))
	}
	first := resp.Header.Get("ETag")
	// No Prefer: 201 with the entity and no Preference-Applied, nor
	// DataServiceId; Prefer: return-content names it.
	for prefer, applied := range map[string]string{"": "", "return-content": "return-content"} {
		rk := "c" + prefer
		resp, body = s.raw(t, "POST", "formats", map[string]string{"Prefer": prefer}, []byte(`{"PartitionKey":"p","RowKey":"`+rk+`"}`))
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Preference-Applied") != applied || resp.Header.Get("DataServiceId") != "" || len(body) == 0 {
			t.Errorf("insert, Prefer %q: %d, Preference-Applied %q, DataServiceId %q; want 201, %q, none", prefer, resp.StatusCode, resp.Header.Get("Preference-Applied"), resp.Header.Get("DataServiceId"), applied)
		}
	}
	resp, _ = s.raw(t, "POST", "Tables", map[string]string{"Prefer": "return-no-content"}, []byte(`{"TableName":"formats2"}`))
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusNoContent || !strings.HasSuffix(loc, "/Tables('formats2')") || resp.Header.Get("DataServiceId") != loc {
		t.Errorf("create table with return-no-content: %d, Location %q, DataServiceId %q", resp.StatusCode, loc, resp.Header.Get("DataServiceId"))
	}
	resp, _ = s.raw(t, "POST", "Tables", nil, []byte(`{"TableName":"formats3"}`))
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Preference-Applied") != "" || resp.Header.Get("DataServiceId") != "" {
		t.Errorf("create table, no Prefer: %d, Preference-Applied %q, DataServiceId %q; want 201, none, none", resp.StatusCode, resp.Header.Get("Preference-Applied"), resp.Header.Get("DataServiceId"))
	}
	// A merge sent as POST with X-HTTP-Method: MERGE (as some SDKs do).
	resp, body = s.raw(t, "POST", "formats(PartitionKey='p',RowKey='r')", map[string]string{"X-HTTP-Method": "MERGE", "If-Match": first}, []byte(`{"N":2}`))
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("ETag") == first {
		t.Fatalf("X-HTTP-Method MERGE: %d %s", resp.StatusCode, body)
	}
	for _, f := range []struct {
		accept string
		want   string
	}{
		{"application/json;odata=nometadata", `^\{"PartitionKey":"p","RowKey":"r","Timestamp":"[^"]+","G":"c9da6455-213d-42c9-9a79-3e9149a57833","L":"5","N":2\}$`},
		{"application/json;odata=minimalmetadata", `^\{"odata\.metadata":"[^"]+/\$metadata#formats/@Element","odata\.etag":"W/\\"datetime'[^']+'\\"","PartitionKey":"p","RowKey":"r","Timestamp":"[^"]+","G@odata\.type":"Edm\.Guid","G":"[^"]+","L@odata\.type":"Edm\.Int64","L":"5","N":2\}$`},
		{"application/json;odata=fullmetadata", `^\{"odata\.metadata":"[^"]+","odata\.type":"devstoreaccount1\.formats","odata\.id":"http://[^"]+/devstoreaccount1/formats\(PartitionKey='p',RowKey='r'\)","odata\.etag":"W/\\"datetime'[^']+'\\"","odata\.editLink":"formats\(PartitionKey='p',RowKey='r'\)","PartitionKey":"p","RowKey":"r","Timestamp@odata\.type":"Edm\.DateTime","Timestamp":"[^"]+","G@odata\.type":"Edm\.Guid",`},
	} {
		resp, body := s.raw(t, "GET", "formats(PartitionKey='p',RowKey='r')", map[string]string{"Accept": f.accept}, nil)
		if resp.StatusCode != http.StatusOK || !regexp.MustCompile(f.want).Match(body) || !strings.Contains(resp.Header.Get("Content-Type"), f.accept) {
			t.Errorf("%s: %d %s %s", f.accept, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// Delete needs If-Match.
	resp, body = s.raw(t, "DELETE", "formats(PartitionKey='p',RowKey='r')", nil, nil)
	if resp.StatusCode != http.StatusBadRequest || errCode(body) != "MissingRequiredHeader" {
		t.Errorf("delete without If-Match: %d %s", resp.StatusCode, errCode(body))
	}
}

// DateTimes come back as the service writes them: up to 7 fractional
// digits, trailing zeros dropped, across the whole range.
func TestDateTimeText(t *testing.T) {
	s := start(t, tables.Config{})
	s.table(t, "dates")
	in := `{"PartitionKey":"p","RowKey":"r",` +
		`"A@odata.type":"Edm.DateTime","A":"2024-01-01T00:00:00.0000000Z",` +
		`"B@odata.type":"Edm.DateTime","B":"2024-01-01T00:00:06.1230000Z",` +
		`"C@odata.type":"Edm.DateTime","C":"1601-01-01T00:00:00.0000001Z",` +
		`"D@odata.type":"Edm.DateTime","D":"9999-12-31T23:59:59.9999999Z"}`
	if resp, body := s.raw(t, "POST", "dates", nil, []byte(in)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	_, body := s.raw(t, "GET", "dates(PartitionKey='p',RowKey='r')", nil, nil)
	for _, want := range []string{`"A":"2024-01-01T00:00:00Z"`, `"B":"2024-01-01T00:00:06.123Z"`, `"C":"1601-01-01T00:00:00.0000001Z"`, `"D":"9999-12-31T23:59:59.9999999Z"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("%s not in %s", want, body)
		}
	}
}

// A Double in exponent notation comes back as Azure wrote it in
// azure-sdk-for-js's recording
// tableclient_createentity_getentity_and_delete/recording_should_createentity_with_double_number_in_scientific_notation:
// sent "1.23456789012346e+24" as Edm.Double, answered
// 1.23456789012346E+24 under minimal metadata, unannotated.
func TestDoubleExponentText(t *testing.T) {
	s := start(t, tables.Config{})
	s.table(t, "doublesci")
	resp, body := s.raw(t, "POST", "doublesci", map[string]string{"Prefer": "return-no-content"}, []byte(`{"PartitionKey":"doubleSci","RowKey":"0","Value":"1.23456789012346e+24","Value@odata.type":"Edm.Double"}`))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("insert: %d %s", resp.StatusCode, body)
	}
	resp, body = s.raw(t, "GET", "doublesci(PartitionKey='doubleSci',RowKey='0')", map[string]string{"Accept": "application/json;odata=minimalmetadata"}, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(body), `,"Value":1.23456789012346E+24}`) {
		t.Fatalf("read: %d %s, want Value 1.23456789012346E+24 unannotated", resp.StatusCode, body)
	}
}

// TestURLKeysNoEntityCanHave: a point read, update or delete whose URL
// names a key no entity can have is refused as Azure refuses it (400
// InvalidInput for a forbidden character, OutOfRangeInput for a key over
// 512 UTF-16 code units), not answered 404 as if the entity were merely
// absent.
func TestURLKeysNoEntityCanHave(t *testing.T) {
	s := start(t, tables.Config{})
	s.table(t, "urlkeys")
	long := strings.Repeat("k", 513)
	for _, tc := range []struct {
		pk, rk string
		code   string
	}{
		{"a%2Fb", "r", "InvalidInput"},
		{"p", "a%5Cb", "InvalidInput"},
		{"p", "a%23b", "InvalidInput"},
		{"a%3Fb", "r", "InvalidInput"},
		{"p", "a%01b", "InvalidInput"},
		{long, "r", "OutOfRangeInput"},
	} {
		path := "urlkeys(PartitionKey='" + tc.pk + "',RowKey='" + tc.rk + "')"
		for _, m := range []struct {
			method string
			hdr    map[string]string
			body   []byte
		}{
			{"GET", nil, nil},
			{"DELETE", map[string]string{"If-Match": "*"}, nil},
			{"PUT", nil, []byte(`{}`)},
			{"MERGE", map[string]string{"If-Match": "*"}, []byte(`{}`)},
		} {
			resp, body := s.raw(t, m.method, path, m.hdr, m.body)
			if resp.StatusCode != http.StatusBadRequest || errCode(body) != tc.code {
				t.Errorf("%s %.60s: %d %s, want 400 %s", m.method, path, resp.StatusCode, errCode(body), tc.code)
			}
		}
	}
}
