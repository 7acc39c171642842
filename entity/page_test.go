package entity_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
)

type pageRow struct {
	PartitionKey, RowKey string
	ETag                 string
	Name                 string
	N                    int64
}

func pageCodec(t *testing.T) *entity.Codec {
	t.Helper()
	c, err := entity.CodecOf(reflect.TypeOf(pageRow{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Decoding a page row by row in one pass gives what splitting it and
// unmarshalling each row gives, whatever members surround "value".
// decodePage decodes every row of a page body with one PageReader.
func decodePage(t *testing.T, c *entity.Codec, body string) []pageRow {
	t.Helper()
	var got []pageRow
	r := entity.NewPageReader([]byte(body))
	for r.Next() {
		var v pageRow
		if err := r.Decode(c, &v); err != nil {
			t.Fatalf("Decode in %s: %v", body, err)
		}
		got = append(got, v)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("Err in %s: %v", body, err)
	}
	return got
}

func TestPageReaderDecodeMatchesSplit(t *testing.T) {
	c := pageCodec(t)
	rows := `[{"odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"a","Name":"x\"y\u00e9","N@odata.type":"Edm.Int64","N":"7"},` +
		` {"PartitionKey":"p","RowKey":"b","Extra":{"deep":[1,{"k":"v"}]},"Name":"","N":3} ]`
	for _, body := range []string{
		`{"value":` + rows + `}`,
		`{"odata.metadata":"http://x/$metadata#t","value":` + rows + `}`,
		` { "value" : ` + rows + ` , "odata.nextLink":"n" } `,
	} {
		split, err := entity.SplitPage([]byte(body))
		if err != nil {
			t.Fatalf("SplitPage(%s): %v", body, err)
		}
		var want []pageRow
		for _, raw := range split {
			var v pageRow
			if err := c.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
		got := decodePage(t, c, body)
		if len(got) != 2 || !reflect.DeepEqual(got, want) {
			t.Errorf("page %s:\n got %+v\nwant %+v", body, got, want)
		}
		if got[0].Name != "x\"yé" || got[0].N != 7 || got[0].ETag != `W/"1"` {
			t.Errorf("first row decoded as %+v", got[0])
		}
	}
}

// Rows the caller does not read are skipped; Raw returns them whole.
func TestPageReaderSkipAndRaw(t *testing.T) {
	body := []byte(`{"value":[{"RowKey":"a"},{"RowKey":"b","X":[{}]},{"RowKey":"c"}]}`)
	r := entity.NewPageReader(body)
	var raws []string
	for i := 0; r.Next(); i++ {
		if i == 1 {
			continue // not read: skipped by the next Next
		}
		raw, err := r.Raw()
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(raw))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(raws, "|") != `{"RowKey":"a"}|{"RowKey":"c"}` {
		t.Errorf("raw rows %q", raws)
	}
}

func TestPageReaderEmptyAndMalformed(t *testing.T) {
	for _, body := range []string{`{}`, `{"value":[]}`, ` {"value":[ ],"x":1} `} {
		r := entity.NewPageReader([]byte(body))
		if r.Next() || r.Err() != nil {
			t.Errorf("%s: a row or an error (%v)", body, r.Err())
		}
	}
	for _, body := range []string{``, `[]`, `{"value":[1]}`, `{"value":[{"a":1}`, `{"value":[{"a":1}]`, `{"value":[{"a":1}]} x`, `{"value":[{"a":1} {"b":2}]}`, `{"value":[{"a":"\x01"}]}`} {
		r := entity.NewPageReader([]byte(body))
		for r.Next() {
			if _, err := r.Raw(); err != nil {
				break
			}
		}
		if !errors.Is(r.Err(), entity.ErrInvalidEntity) {
			t.Errorf("%q: Err = %v, want ErrInvalidEntity", body, r.Err())
		}
	}
}

// A row that does not fit T stops the reader with Decode's error naming
// the field; a single row (the SDK's form) reads as a page of one.
func TestPageReaderDecodeErrorAndSingleRow(t *testing.T) {
	c := pageCodec(t)
	r := entity.NewPageReader([]byte(`{"value":[{"N":"x"},{"N":1}]}`))
	if !r.Next() {
		t.Fatal(r.Err())
	}
	var v pageRow
	if err := r.Decode(c, &v); !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), "N") {
		t.Errorf("Decode = %v, want an ErrInvalidEntity naming N", err)
	}
	if r.Next() {
		t.Error("Next after a failed Decode")
	}
	r.ResetRow([]byte(`{"RowKey":"r","N":2}`))
	n := 0
	for r.Next() {
		if err := r.Decode(c, &v); err != nil || v.RowKey != "r" || v.N != 2 {
			t.Errorf("single row: %+v, %v", v, err)
		}
		n++
	}
	if n != 1 || r.Err() != nil {
		t.Errorf("single row: %d rows, %v", n, r.Err())
	}
}

// The eight-bytes-at-a-time string scan finds a quote, a backslash or a
// control character at every offset, as encoding/json does.
func TestScannerStringsAtEveryOffset(t *testing.T) {
	c := pageCodec(t)
	for n := 0; n < 20; n++ {
		for _, tail := range []string{``, `\"`, `\\`, `\u00e9`, `\n`, "\x01", "\x1f", "é", "\x7f"} {
			s := strings.Repeat("a", n) + tail + strings.Repeat("b", n%9)
			raw := `{"Name":"` + s + `"}`
			var got pageRow
			err := c.Unmarshal([]byte(raw), &got)
			var want struct{ Name string }
			jerr := json.Unmarshal([]byte(raw), &want)
			if (err == nil) != (jerr == nil) {
				t.Fatalf("%q: tablekit %v, encoding/json %v", raw, err, jerr)
			}
			if err == nil && got.Name != want.Name {
				t.Fatalf("%q: decoded %q, want %q", raw, got.Name, want.Name)
			}
		}
	}
}

// Rows whose members change order, name or escaping from one row to the
// next decode as each row alone does: the reader's memory of the previous
// row's member names is a shortcut, never a source of values.
// shapeChangingRows are rows of one table whose members change from row
// to row: order, escapes, annotations, extra, missing and repeated ones.
var shapeChangingRows = []string{
	`{"PartitionKey":"p","RowKey":"1","Name":"one","N":1}`,
	`{"PartitionKey":"p","RowKey":"2","Name":"two","N":2}`,
	`{"RowKey":"3","PartitionKey":"p","N":3,"Name":"three"}`,
	`{"PartitionKey":"p","RowKey":"4","Nam\u0065":"four","N@odata.type":"Edm.Int64","N":"4"}`,
	`{"PartitionKey":"p","RowKey":"5","Other":"x","Name":"fi\"ve","N":5}`,
	`{"PartitionKey":"p","RowKey":"6"}`,
	`{"PartitionKey":"p","RowKey":"7","Name":"seven","N":7,"Name":"seven again"}`,
}

func TestPageReaderRowsChangingShape(t *testing.T) {
	c := pageCodec(t)
	rows := shapeChangingRows
	body := `{"value":[` + strings.Join(rows, ",") + `]}`
	got := decodePage(t, c, body)
	if len(got) != len(rows) {
		t.Fatalf("decoded %d rows, want %d", len(got), len(rows))
	}
	for i, raw := range rows {
		var want pageRow
		if err := c.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Errorf("row %d: page reader gave %+v, alone %+v", i, got[i], want)
		}
	}
	if got[3].Name != "four" || got[4].Name != `fi"ve` || got[5].Name != "" || got[6].Name != "seven again" {
		t.Errorf("rows decoded as %+v", got)
	}
}

// The strings a page reader decodes share arenas of a few KiB, across
// rows and pages: they stay what they were decoded as when the page's
// body is overwritten and the reader moves on to other pages (the arena
// is only appended to), escaped or not, short or long, on either side of
// an arena's end.
func TestPageReaderStringsOutliveTheirPage(t *testing.T) {
	c := pageCodec(t)
	type kept struct {
		row  pageRow
		want pageRow
	}
	var all []kept
	var r entity.PageReader
	for page := range 4 {
		var rows []string
		var want []pageRow
		for i := range 300 {
			name := strings.Repeat("n", (page*300+i)%700) + `\"é\u00e9\n` + strconv.Itoa(i)
			rk := strconv.Itoa(page) + "-" + strconv.Itoa(i)
			rows = append(rows, `{"odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"","PartitionKey":"p","RowKey":"`+rk+`","Name":"`+name+`","N@odata.type":"Edm.Int64","N":"`+strconv.Itoa(i)+`"}`)
			var w pageRow
			if err := c.Unmarshal([]byte(rows[i]), &w); err != nil {
				t.Fatal(err)
			}
			want = append(want, w)
		}
		body := []byte(`{"value":[` + strings.Join(rows, ",") + `]}`)
		r.Reset(body)
		for i := 0; r.Next(); i++ {
			var v pageRow
			if err := r.Decode(c, &v); err != nil {
				t.Fatal(err)
			}
			all = append(all, kept{v, want[i]})
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		for i := range body {
			body[i] = 'X' // the body's buffer goes back to a pool and is reused
		}
	}
	if len(all) != 1200 {
		t.Fatalf("decoded %d rows, want 1200", len(all))
	}
	for i, k := range all {
		if k.row != k.want {
			t.Fatalf("row %d is now %+v, was decoded as %+v", i, k.row, k.want)
		}
	}
}

// hookAnn records the annotation its property arrived with.
type hookAnn struct{ typ entity.EDMType }

func (h *hookAnn) UnmarshalProperty(v entity.Value) error { h.typ = v.Type; return nil }
func (h hookAnn) MarshalProperty() (entity.Value, error)  { return entity.String(""), nil }

// Annotations a T does not read are skipped whole when a row repeats the
// previous row's text; a row that differs, or is malformed after the
// repeated text, is read as it would be alone. A T with a property hook
// still gets each row's own annotation.
func TestPageReaderRepeatedAnnotations(t *testing.T) {
	c := pageCodec(t)
	rows := []string{
		`{"PartitionKey":"p","RowKey":"1","X@odata.type":"Edm.String","X":"a","N@odata.type":"Edm.Int64","N":"1"}`,
		`{"PartitionKey":"p","RowKey":"2","X@odata.type":"Edm.String","X":"b","N@odata.type":"Edm.Int64","N":"2"}`,
		`{"PartitionKey":"p","RowKey":"3","X@odata.type":"Edm.Strin","X":"c","N@odata.type":"Edm.Int64","N":3}`,
		`{"PartitionKey":"p","RowKey":"4","X@odata.type":"Edm.String\u0020","X":"d","N":4}`,
		`{"PartitionKey":"p","RowKey":"5","X@odata.type":"Edm.String","X":"e","N@odata.type":"Edm.Int64","N":"5"}`,
	}
	got := decodePage(t, c, `{"value":[`+strings.Join(rows, ",")+`]}`)
	if len(got) != len(rows) {
		t.Fatalf("decoded %d rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		if g.RowKey != strconv.Itoa(i+1) || g.N != int64(i+1) {
			t.Errorf("row %d decoded as %+v", i, g)
		}
	}
	for _, bad := range []string{
		`{"PartitionKey":"p","RowKey":"2","X@odata.type":"Edm.String"5,"N":"2"}`,
		`{"PartitionKey":"p","RowKey":"2","X@odata.type":"Edm.String"`,
		`{"PartitionKey":"p","RowKey":"2","X@odata.type":"Edm.Str`,
		`{"PartitionKey":"p","RowKey":"2","X@odata.type":"Edm.String"}}`,
	} {
		r := entity.NewPageReader([]byte(`{"value":[` + rows[0] + `,` + bad + `]}`))
		var v pageRow
		if !r.Next() || r.Decode(c, &v) != nil {
			t.Fatalf("first row: %v", r.Err())
		}
		err := r.Err()
		if r.Next() {
			err = r.Decode(c, &v)
			if err == nil {
				r.Next()
				err = r.Err()
			}
		} else {
			err = r.Err()
		}
		if !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("%s after a good row: %v, want ErrInvalidEntity", bad, err)
		}
	}

	type hooked struct {
		PartitionKey, RowKey string
		H                    hookAnn
	}
	hc, err := entity.CodecOf(reflect.TypeOf(hooked{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	hr := entity.NewPageReader([]byte(`{"value":[` +
		`{"PartitionKey":"p","RowKey":"1","H@odata.type":"Edm.Int64","H":"1"},` +
		`{"PartitionKey":"p","RowKey":"2","H@odata.type":"Edm.Int64","H":"2"},` +
		`{"PartitionKey":"p","RowKey":"3","H":3},` +
		`{"PartitionKey":"p","RowKey":"4","H@odata.type":"Edm.Double","H":4}]}`))
	var types []entity.EDMType
	for hr.Next() {
		var v hooked
		if err := hr.Decode(hc, &v); err != nil {
			t.Fatal(err)
		}
		types = append(types, v.H.typ)
	}
	if want := []entity.EDMType{entity.EdmInt64, entity.EdmInt64, entity.EdmInt32, entity.EdmDouble}; !reflect.DeepEqual(types, want) {
		t.Errorf("hook saw %v, want %v", types, want)
	}
}

// A DateTime in the service's form is read straight from the text; any
// other spelling of a string (white space around it, an escaped digit or
// Z, a null) is read as before, in a row alone and in a page.
func TestDateTimeSpellings(t *testing.T) {
	type row struct {
		PartitionKey, RowKey string
		T                    time.Time
	}
	c, err := entity.CodecOf(reflect.TypeOf(row{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2024, 1, 2, 3, 4, 5, 123456700, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Time
		bad   bool
	}{
		{`"2024-01-02T03:04:05.1234567Z"`, want, false},
		{` "2024-01-02T03:04:05.1234567Z" `, want, false},
		{`"2024-01-02T03:04:05.1234567\u005a"`, want, false},
		{`"\u0032024-01-02T03:04:05.1234567Z"`, want, false},
		{`"2024-01-02T03:04:05.123456Z"`, want.Truncate(time.Microsecond), false},
		{`null`, time.Time{}, false},
		{`"2024-01-02T03:04:05.1234567Z`, time.Time{}, true},
		{`"2024-01-02T03:04:05.1234567Z\"`, time.Time{}, true},
		{`"2024-02-30T03:04:05.1234567Z"`, time.Time{}, true},
		{`"2024-01-02T03:04:05.12345x7Z"`, time.Time{}, true},
		{`20240102`, time.Time{}, true},
	} {
		raw := `{"PartitionKey":"p","RowKey":"r","T":` + tc.value + `}`
		var alone row
		err := c.Unmarshal([]byte(raw), &alone)
		r := entity.NewPageReader([]byte(`{"value":[` + raw + `,` + raw + `]}`))
		var inPage []row
		var perr error
		for r.Next() {
			var v row
			if perr = r.Decode(c, &v); perr != nil {
				break
			}
			inPage = append(inPage, v)
		}
		if perr == nil {
			perr = r.Err()
		}
		if tc.bad {
			if err == nil || perr == nil {
				t.Errorf("%s: alone %v, in a page %v; want errors", tc.value, err, perr)
			}
			continue
		}
		if err != nil || perr != nil || len(inPage) != 2 {
			t.Errorf("%s: alone %v, in a page %d rows, %v", tc.value, err, len(inPage), perr)
			continue
		}
		for _, got := range []time.Time{alone.T, inPage[0].T, inPage[1].T} {
			if !got.Equal(tc.want) || (!got.IsZero() && got.Location() != time.UTC) {
				t.Errorf("%s: decoded %v, want %v", tc.value, got, tc.want)
			}
		}
	}
}

// A codec's Unmarshal matches member names against the ones it learned
// from an earlier entity: whatever entities follow (other orders, missing,
// extra, escaped or repeated members, other annotations, malformed ones),
// each decodes as it does with a codec that never saw another, also when
// many goroutines share the codec.
func TestUnmarshalLearnedMembersChangeNothing(t *testing.T) {
	rows := append(slices.Clone(shapeChangingRows),
		`{"odata.etag":"W/\"x\"","PartitionKey":"p","RowKey":"8","X@odata.type":"Edm.String","X":"a","N@odata.type":"Edm.Int64","N":"8"}`,
		`{"odata.etag":"W/\"y\"","PartitionKey":"p","RowKey":"9","X@odata.type":"Edm.Strin","X":"c","N@odata.type":"Edm.Int64","N":9}`,
		`{"PartitionKey":"p","RowKey":"10","Name":"ten","N":"ten"}`,
		`{"PartitionKey":"p","RowKey":"11","Name":"eleven","N":11`,
		`{"PartitionKey":"p","RowKey":"12","Name":"twelve","N":12}x`,
	)
	alone := func(raw string) (pageRow, error) {
		var v pageRow
		err := pageCodec(t).Unmarshal([]byte(raw), &v)
		return v, err
	}
	check := func(c *entity.Codec, raw string) string {
		want, werr := alone(raw)
		var got pageRow
		gerr := c.Unmarshal([]byte(raw), &got)
		if (gerr != nil) != (werr != nil) || got != want {
			return raw + ": decoded " + strconv.Quote(fmt.Sprintf("%+v, %v", got, gerr)) + ", alone " + strconv.Quote(fmt.Sprintf("%+v, %v", want, werr))
		}
		return ""
	}
	// Every row first, so that every shape is the one learned.
	for first := range rows {
		c := pageCodec(t)
		for pass := 0; pass < 3; pass++ {
			for i := range rows {
				if msg := check(c, rows[(first+i)%len(rows)]); msg != "" {
					t.Errorf("learned from row %d, pass %d: %s", first, pass, msg)
				}
			}
		}
	}
	c := pageCodec(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(rows))
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 * len(rows) {
				if msg := check(c, rows[(g+i)%len(rows)]); msg != "" {
					errs <- msg
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error("concurrent:", msg)
	}
}
