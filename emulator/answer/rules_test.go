package answer_test

import (
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/entity"
)

func ent(props map[string]entity.Value) entity.Entity {
	return entity.Entity{Properties: props}
}

func wide(n int) entity.Entity {
	e := ent(map[string]entity.Value{})
	for i := 0; i < n; i++ {
		e.Properties["P"+strconv.Itoa(i)] = entity.Int32(int32(i))
	}
	return e
}

func TestCheckEntity(t *testing.T) {
	big := ent(map[string]entity.Value{})
	for i := 0; i < 17; i++ {
		big.Properties["B"+strconv.Itoa(i)] = entity.Binary(make([]byte, entity.MaxBinarySize))
	}
	for _, c := range []struct {
		name   string
		pk, rk string
		e      entity.Entity
		code   string // "" accepted
	}{
		{"plain", "p", "r", ent(map[string]entity.Value{"A": entity.String("x"), "_b": entity.Int64(1), "Ünï1": entity.Bool(true)}), ""},
		{"252 properties", "p", "r", wide(entity.MaxProperties), ""},
		{"253 properties", "p", "r", wide(entity.MaxProperties + 1), answer.CodeTooManyProperties},
		{"a slash in PartitionKey", "a/b", "r", ent(nil), answer.CodeInvalidInput},
		{"a control character in RowKey", "p", "a\x01", ent(nil), answer.CodeInvalidInput},
		{"a RowKey over 1 KiB", "p", strings.Repeat("x", 513), ent(nil), answer.CodeOutOfRangeInput},
		{"empty keys", "", "", ent(nil), ""},
		{"name of 255", "p", "r", ent(map[string]entity.Value{"N" + strings.Repeat("x", 254): entity.Int32(1)}), ""},
		{"name of 256", "p", "r", ent(map[string]entity.Value{"N" + strings.Repeat("x", 255): entity.Int32(1)}), answer.CodePropertyNameTooLong},
		{"name with a dash", "p", "r", ent(map[string]entity.Value{"a-b": entity.Int32(1)}), answer.CodePropertyNameInvalid},
		{"name starting with a digit", "p", "r", ent(map[string]entity.Value{"1st": entity.Int32(1)}), answer.CodePropertyNameInvalid},
		{"an invalid name before too many properties", "p", "r", func() entity.Entity {
			e := wide(300)
			e.Properties["a b"] = entity.Int32(1)
			return e
		}(), answer.CodePropertyNameInvalid},
		{"a String of 32768 units", "p", "r", ent(map[string]entity.Value{"S": entity.String(strings.Repeat("x", entity.MaxStringUnits))}), ""},
		{"a String of 32769 units", "p", "r", ent(map[string]entity.Value{"S": entity.String(strings.Repeat("x", entity.MaxStringUnits+1))}), answer.CodePropertyValueTooLarge},
		{"a String over the limit in UTF-16 only", "p", "r", ent(map[string]entity.Value{"S": entity.String(strings.Repeat("\U0001F600", entity.MaxStringUnits/2+1))}), answer.CodePropertyValueTooLarge},
		{"a Binary over 64 KiB", "p", "r", ent(map[string]entity.Value{"B": entity.Binary(make([]byte, entity.MaxBinarySize+1))}), answer.CodePropertyValueTooLarge},
		{"a DateTime before 1601", "p", "r", ent(map[string]entity.Value{"D": {Type: entity.EdmDateTime, V: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}}), answer.CodeOutOfRangeInput},
		{"over 1 MiB", "p", "r", big, answer.CodeEntityTooLarge},
	} {
		got := answer.CheckEntity(c.pk, c.rk, c.e)
		switch {
		case c.code == "" && got != nil:
			t.Errorf("%s: refused: %v", c.name, got)
		case c.code != "" && got == nil:
			t.Errorf("%s: accepted, want %s", c.name, c.code)
		case got != nil && (got.Code != c.code || got.Status != http.StatusBadRequest || got.Message == ""):
			t.Errorf("%s: %d %v, want 400 %s", c.name, got.Status, got, c.code)
		}
	}
}

func TestCheckQuery(t *testing.T) {
	for q, refused := range map[string]bool{
		"$top=1000":                   false,
		"$top=1001":                   true,
		"$top=1":                      false,
		"$top=0":                      false,
		"$top=1.5":                    true,
		"$filter=A eq 5LL":            true,
		"$filter=A eq null":           true,
		"$filter=A eq 3D and B":       false,
		"$filter=A EQ 1":              true,
		"$top=-1":                     true,
		"$top=abc":                    true,
		"$filter=PartitionKey eq 'a'": false,
		"$filter=PartitionKey eq 'a":  true,
		"$filter=RowKey eq 'it''s'":   false,
		"$filter=RowKey eq 'it''s":    true,
		"$filter=RowKey eq ''":        false,
		"$filter=A eq 'x' and B eq 'y''' or C eq 'z": true,
		"": false,
	} {
		v, err := url.ParseQuery(strings.ReplaceAll(q, " ", "%20"))
		if err != nil {
			t.Fatal(err)
		}
		got := answer.CheckQuery(v)
		if (got != nil) != refused || got != nil && (got.Status != 400 || got.Code != answer.CodeInvalidInput) {
			t.Errorf("%q: %v, want refused %v (400 InvalidInput)", q, got, refused)
		}
	}
	for _, f := range []string{"1 eq 2", "A eq B", "5 lt Amount"} {
		got := answer.CheckQuery(url.Values{"$filter": {f}})
		if got == nil || got.Status != 501 || got.Code != answer.CodeNotImplemented {
			t.Errorf("%q: %v, want 501 NotImplemented", f, got)
		}
	}
}

func TestCheckBatch(t *testing.T) {
	op := func(pk, rk string, e *entity.Entity) answer.BatchOp {
		return answer.BatchOp{Table: "t", PartitionKey: pk, RowKey: rk, Entity: e}
	}
	w := wide(253)
	var hundred, many []answer.BatchOp
	for i := 0; i < 101; i++ {
		many = append(many, op("p", strconv.Itoa(i), nil))
	}
	hundred = many[:100]
	for _, c := range []struct {
		name  string
		ops   []answer.BatchOp
		code  string
		index int
	}{
		{"empty", nil, "", 0},
		{"100 operations", hundred, "", 0},
		{"101 operations", many, answer.CodeInvalidInput, 99},
		{"two partitions", []answer.BatchOp{op("a", "1", nil), op("a", "2", nil), op("b", "3", nil)}, answer.CodeDifferentPartitions, 2},
		{"one entity twice", []answer.BatchOp{op("a", "1", nil), op("a", "2", nil), op("a", "1", &entity.Entity{})}, answer.CodeInvalidDuplicateRow, 2},
		{"an entity rule", []answer.BatchOp{op("a", "1", nil), op("a", "2", &w)}, answer.CodeTooManyProperties, 1},
	} {
		got := answer.CheckBatch(c.ops)
		if c.code == "" {
			if got != nil {
				t.Errorf("%s: refused: %v", c.name, got)
			}
			continue
		}
		if got == nil || got.Err.Code != c.code || got.Index != c.index || got.Err.Status != 400 {
			t.Errorf("%s: %v, want operation %d 400 %s", c.name, got, c.index, c.code)
			continue
		}
		if want := strconv.Itoa(c.index) + ":" + got.Err.Message; got.Message() != want {
			t.Errorf("%s: message %q, want %q", c.name, got.Message(), want)
		}
	}
}

// TestBatchMessageIndex: Azure prefixes a refused operation's message
// with its index, but not in a change set of one operation (412 alone in
// its change set: no prefix, 2017 and 2021; 404 at index 0 of three: "0:").
func TestBatchMessageIndex(t *testing.T) {
	failed := answer.New(412, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.")
	for _, c := range []struct {
		index, ops int
		want       string
	}{
		{0, 1, failed.Message},
		{0, 2, "0:" + failed.Message},
		{0, 3, "0:" + failed.Message},
		{3, 4, "3:" + failed.Message},
	} {
		be := &answer.BatchError{Index: c.index, Operations: c.ops, Err: failed}
		if got := be.Message(); got != c.want {
			t.Errorf("operation %d of %d: %q, want %q", c.index, c.ops, got, c.want)
		}
	}
	one := answer.CheckBatch([]answer.BatchOp{{Table: "t", PartitionKey: "a", RowKey: "1", Entity: ptr(wide(253))}})
	if one == nil || one.Message() != one.Err.Message {
		t.Errorf("a one-operation change set refused by CheckBatch: %v, want no index", one)
	}
}

func ptr[T any](v T) *T { return &v }

func TestKeyRange(t *testing.T) {
	if answer.KeyRangeOf(url.Values{"spk": {"a"}}) != nil {
		t.Error("a range without a signature")
	}
	if answer.KeyRangeOf(url.Values{"sig": {"x"}, "sp": {"r"}}) != nil {
		t.Error("a SAS without a range")
	}
	r := answer.KeyRangeOf(url.Values{"sig": {"x"}, "spk": {"b"}, "srk": {"5"}, "epk": {"d"}, "erk": {"2"}})
	for _, c := range []struct {
		pk, rk string
		in     bool
	}{{"a", "9", false}, {"b", "4", false}, {"b", "5", true}, {"c", "0", true}, {"d", "2", true}, {"d", "3", false}, {"e", "", false}} {
		if r.Contains(c.pk, c.rk) != c.in {
			t.Errorf("range [b/5, d/2] contains (%s, %s) = %v", c.pk, c.rk, !c.in)
		}
	}
	got, err := r.Filter().Build()
	if err != nil || got != "((PartitionKey gt 'b') or ((PartitionKey eq 'b') and (RowKey ge '5'))) and ((PartitionKey lt 'd') or ((PartitionKey eq 'd') and (RowKey le '2')))" {
		t.Errorf("range filter %q, %v", got, err)
	}
	// The service orders keys by UTF-16 code units: U+FFFD sorts above
	// U+1F600 there, below it in UTF-8.
	hi := answer.KeyRange{StartPK: "\U0001F600", HasStart: true}
	if !hi.Contains("\uFFFD", "") {
		t.Error("U+FFFD is after U+1F600 in the service's order")
	}
	if got, _ := (&answer.KeyRange{StartPK: "it's", HasStart: true}).Filter().Build(); got != "PartitionKey ge 'it''s'" {
		t.Errorf("quote in a bound: %q", got)
	}
}

var odataMessage = regexp.MustCompile(`^3:` + regexp.QuoteMeta(answer.MsgInvalidDuplicateRow) + `\nRequestId:[0-9a-f-]{36}\nTime:`)

// TestWriteBatchError reads the answer as a client does: 202, a
// multipart/mixed body whose change set holds one HTTP response with the
// inner status and an OData error naming the operation.
func TestWriteBatchError(t *testing.T) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/devstoreaccount1/$batch", nil)
	r.Header.Set("x-ms-version", "2019-02-02")
	answer.WriteBatchError(rec, r, &answer.BatchError{Index: 3, Err: answer.New(400, answer.CodeInvalidDuplicateRow, answer.MsgInvalidDuplicateRow)})
	res := rec.Result()
	if res.StatusCode != http.StatusAccepted || res.Header.Get("x-ms-version") != "2019-02-02" || res.Header.Get("x-ms-request-id") == "" {
		t.Fatalf("answer %d %v", res.StatusCode, res.Header)
	}
	_, params, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	part, err := multipart.NewReader(res.Body, params["boundary"]).NextPart()
	if err != nil {
		t.Fatal(err)
	}
	_, cparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := multipart.NewReader(part, cparams["boundary"]).NextPart()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(inner)
	head, js, ok := strings.Cut(string(body), "\r\n\r\n")
	if !ok || !strings.HasPrefix(head, "HTTP/1.1 400 Bad Request\r\n") {
		t.Fatalf("inner response %q", body)
	}
	var e struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.NewDecoder(strings.NewReader(js)).Decode(&e); err != nil {
		t.Fatalf("inner body %q: %v", js, err)
	}
	if e.OData.Code != answer.CodeInvalidDuplicateRow || !odataMessage.MatchString(e.OData.Message.Value) {
		t.Errorf("inner error %+v", e)
	}
}

// TestInvalidFilterPosition: Azure names the position just past the token
// that cannot follow a complete expression (the Python SDK's recorded
// "Syntax error at position 7 in 'aaa bbb ccc'."), in UTF-16 code units;
// other malformed filters have the generic message.
func TestInvalidFilterPosition(t *testing.T) {
	for _, c := range []struct{ filter, want string }{
		{"aaa bbb ccc", "Syntax error at position 7 in 'aaa bbb ccc'."},
		{"This is not a valid filter.", "Syntax error at position 7 in 'This is not a valid filter.'."},
		{"a eq 1 'x''y' z", "Syntax error at position 13 in 'a eq 1 'x''y' z'."},
		{"é eq 1 bb", "Syntax error at position 9 in 'é eq 1 bb'."},
		{"a eq '\U0001F600' bb", "Syntax error at position 12 in 'a eq '\U0001F600' bb'."},
		{"a eq", answer.MsgInvalidInput},
		{"a eq 'x", answer.MsgInvalidInput},
	} {
		got := answer.CheckQuery(url.Values{"$filter": {c.filter}})
		if got == nil || got.Status != 400 || got.Code != answer.CodeInvalidInput || got.Message != c.want {
			t.Errorf("%q: %v, want 400 InvalidInput %q", c.filter, got, c.want)
		}
	}
}
