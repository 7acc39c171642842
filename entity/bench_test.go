package entity_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tools/benchutil"
)

// benchRow has 10 custom properties of the common types.
type benchRow struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
	Name         string
	Email        string
	Department   string
	Age          int32
	Visits       int32
	Salary       int64
	Score        float64
	Active       bool
	Joined       time.Time
	ID           entity.GUID
}

func newBenchRow(i int) benchRow {
	return benchRow{
		PartitionKey: "Sales", RowKey: "emp_" + strconv.Itoa(100000+i),
		Name: "Ann Lee " + strconv.Itoa(i), Email: "ann.lee" + strconv.Itoa(i) + "@contoso.com", Department: "Sales",
		Age: 34, Visits: int32(i), Salary: 1<<40 + int64(i), Score: 97.25, Active: i%2 == 0,
		Joined: time.Date(2015, 3, 4, 5, 6, 7, 123456700, time.UTC), ID: entity.NewGUID(),
	}
}

// jsonRow is what a developer writes for encoding/json: JSON-tagged
// fields, Int64 as an annotated string, the other annotations as fields.
type jsonRow struct {
	PartitionKey string      `json:"PartitionKey"`
	RowKey       string      `json:"RowKey"`
	ETag         string      `json:"odata.etag,omitempty"`
	Timestamp    *time.Time  `json:"Timestamp,omitempty"`
	Name         string      `json:"Name"`
	Email        string      `json:"Email"`
	Department   string      `json:"Department"`
	Age          int32       `json:"Age"`
	Visits       int32       `json:"Visits"`
	Salary       int64       `json:"Salary,string"`
	SalaryType   string      `json:"Salary@odata.type"`
	Score        float64     `json:"Score"`
	ScoreType    string      `json:"Score@odata.type"`
	Active       bool        `json:"Active"`
	Joined       time.Time   `json:"Joined"`
	JoinedType   string      `json:"Joined@odata.type"`
	ID           entity.GUID `json:"ID"`
	IDType       string      `json:"ID@odata.type"`
}

func toJSONRow(r *benchRow) jsonRow {
	return jsonRow{
		PartitionKey: r.PartitionKey, RowKey: r.RowKey, Name: r.Name, Email: r.Email, Department: r.Department,
		Age: r.Age, Visits: r.Visits, Salary: r.Salary, SalaryType: "Edm.Int64", Score: r.Score, ScoreType: "Edm.Double",
		Active: r.Active, Joined: r.Joined, JoinedType: "Edm.DateTime", ID: r.ID, IDType: "Edm.Guid",
	}
}

func fromJSONRow(j *jsonRow, r *benchRow) {
	*r = benchRow{PartitionKey: j.PartitionKey, RowKey: j.RowKey, ETag: j.ETag, Name: j.Name, Email: j.Email,
		Department: j.Department, Age: j.Age, Visits: j.Visits, Salary: j.Salary, Score: j.Score, Active: j.Active,
		Joined: j.Joined, ID: j.ID}
	if j.Timestamp != nil {
		r.Timestamp = *j.Timestamp
	}
}

// The aztables path: the row as an EDMEntity, encoding/json both ways.
func toEDM(r *benchRow) aztables.EDMEntity {
	return aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: r.PartitionKey, RowKey: r.RowKey},
		Properties: map[string]any{
			"Name": r.Name, "Email": r.Email, "Department": r.Department,
			"Age": r.Age, "Visits": r.Visits, "Salary": aztables.EDMInt64(r.Salary),
			"Score": r.Score, "Active": r.Active, "Joined": aztables.EDMDateTime(r.Joined),
			"ID": aztables.EDMGUID(r.ID.String()),
		},
	}
}

func fromEDM(e *aztables.EDMEntity, r *benchRow) {
	*r = benchRow{PartitionKey: e.PartitionKey, RowKey: e.RowKey, ETag: e.ETag}
	if e.Timestamp != (aztables.EDMDateTime{}) {
		r.Timestamp = time.Time(e.Timestamp)
	}
	p := e.Properties
	r.Name, _ = p["Name"].(string)
	r.Email, _ = p["Email"].(string)
	r.Department, _ = p["Department"].(string)
	r.Age, _ = p["Age"].(int32)
	r.Visits, _ = p["Visits"].(int32)
	if v, ok := p["Salary"].(aztables.EDMInt64); ok {
		r.Salary = int64(v)
	}
	r.Score, _ = p["Score"].(float64)
	r.Active, _ = p["Active"].(bool)
	if v, ok := p["Joined"].(aztables.EDMDateTime); ok {
		r.Joined = time.Time(v)
	}
	if v, ok := p["ID"].(aztables.EDMGUID); ok {
		r.ID, _ = entity.ParseGUID(string(v))
	}
}

// serviceForm returns a row as the service sends it in a query page
// (minimal metadata, with odata.etag and Timestamp).
func serviceForm(b []byte) []byte {
	b = b[:len(b)-1]
	b = append(b, `,"odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.1234567Z"}`...)
	return b
}

func benchCodec(b *testing.B) *entity.Codec {
	c, err := entity.CodecOf(reflect.TypeOf(benchRow{}), nil)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkEncodeEntity(b *testing.B) {
	c := benchCodec(b)
	row := newBenchRow(1)
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for i := 0; i < b.N; i++ {
				var err error
				if buf, err = c.AppendMarshal(buf[:0], &row); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		}),
		benchutil.S("aztables", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for i := 0; i < b.N; i++ {
				out, err := json.Marshal(toEDM(&row))
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.SetBytes(int64(n))
		}),
		benchutil.S("json", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for i := 0; i < b.N; i++ {
				out, err := json.Marshal(toJSONRow(&row))
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.SetBytes(int64(n))
		}),
	)
}

func BenchmarkDecodeEntity(b *testing.B) {
	c := benchCodec(b)
	row := newBenchRow(1)
	raw, _ := c.Marshal(&row)
	raw = serviceForm(raw)
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			var out benchRow
			for i := 0; i < b.N; i++ {
				if err := c.Unmarshal(raw, &out); err != nil {
					b.Fatal(err)
				}
			}
		}),
		benchutil.S("aztables", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			var out benchRow
			for i := 0; i < b.N; i++ {
				var e aztables.EDMEntity
				if err := json.Unmarshal(raw, &e); err != nil {
					b.Fatal(err)
				}
				fromEDM(&e, &out)
			}
		}),
		benchutil.S("json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			var out benchRow
			for i := 0; i < b.N; i++ {
				var j jsonRow
				if err := json.Unmarshal(raw, &j); err != nil {
					b.Fatal(err)
				}
				fromJSONRow(&j, &out)
			}
		}),
	)
}

const pageSize = 1000

func BenchmarkEncodePage(b *testing.B) {
	c := benchCodec(b)
	rows := make([]benchRow, pageSize)
	for i := range rows {
		rows[i] = newBenchRow(i)
	}
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for i := 0; i < b.N; i++ {
				buf = buf[:0]
				for j := range rows {
					var err error
					if buf, err = c.AppendMarshal(buf, &rows[j]); err != nil {
						b.Fatal(err)
					}
				}
			}
		}),
		benchutil.S("aztables", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for j := range rows {
					if _, err := json.Marshal(toEDM(&rows[j])); err != nil {
						b.Fatal(err)
					}
				}
			}
		}),
		benchutil.S("json", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for j := range rows {
					if _, err := json.Marshal(toJSONRow(&rows[j])); err != nil {
						b.Fatal(err)
					}
				}
			}
		}),
	)
}

// BenchmarkDecodePage decodes a 1,000-row query response body into
// []benchRow on every side: tablekit's one-pass PageReader; the aztables
// path (the page's rows, then each row into an EDMEntity, as its pager
// hands them over); encoding/json straight into tagged structs.
func BenchmarkDecodePage(b *testing.B) {
	c := benchCodec(b)
	body := []byte(`{"odata.metadata":"http://127.0.0.1/devstoreaccount1/$metadata#Sales","value":[`)
	for i := 0; i < pageSize; i++ {
		r := newBenchRow(i)
		raw, _ := c.Marshal(&r)
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, serviceForm(raw)...)
	}
	body = append(body, "]}"...)
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var r entity.PageReader
			for i := 0; i < b.N; i++ {
				out := make([]benchRow, 0, pageSize)
				r.Reset(body)
				for r.Next() {
					out = append(out, benchRow{})
					if err := r.Decode(c, &out[len(out)-1]); err != nil {
						b.Fatal(err)
					}
				}
				if r.Err() != nil || len(out) != pageSize {
					b.Fatal(r.Err(), len(out))
				}
			}
		}),
		benchutil.S("aztables", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for i := 0; i < b.N; i++ {
				var page struct{ Value []json.RawMessage }
				if err := json.Unmarshal(body, &page); err != nil {
					b.Fatal(err)
				}
				out := make([]benchRow, len(page.Value))
				for j, raw := range page.Value {
					var e aztables.EDMEntity
					if err := json.Unmarshal(raw, &e); err != nil {
						b.Fatal(err)
					}
					fromEDM(&e, &out[j])
				}
			}
		}),
		benchutil.S("json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for i := 0; i < b.N; i++ {
				var page struct{ Value []jsonRow }
				if err := json.Unmarshal(body, &page); err != nil {
					b.Fatal(err)
				}
				out := make([]benchRow, len(page.Value))
				for j := range page.Value {
					fromJSONRow(&page.Value[j], &out[j])
				}
			}
		}),
	)
}

// The two paths decode the benchmark rows to the same values.
func TestBenchPathsAgree(t *testing.T) {
	c, _ := entity.CodecOf(reflect.TypeOf(benchRow{}), nil)
	r := newBenchRow(7)
	raw, _ := c.Marshal(&r)
	raw = serviceForm(raw)
	var a, z benchRow
	if err := c.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	var e aztables.EDMEntity
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	fromEDM(&e, &z)
	// aztables v1.4.1 drops every property annotated Edm.Double (its
	// decoder has no case for the annotation and stores nil): the SDK path
	// loses Score.
	if e.Properties["Score"] != nil || z.Score != 0 {
		t.Errorf("aztables decoded the annotated Double as %#v; update this note", e.Properties["Score"])
	}
	z.Score = a.Score
	if !reflect.DeepEqual(a, z) {
		t.Errorf("tablekit %#v\naztables %#v", a, z)
	}
	var j jsonRow
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	var viaJSON benchRow
	fromJSONRow(&j, &viaJSON)
	if !reflect.DeepEqual(a, viaJSON) {
		t.Errorf("tablekit %#v\nencoding/json %#v", a, viaJSON)
	}
	jb, _ := json.Marshal(toJSONRow(&r))
	var back2 benchRow
	if err := c.Unmarshal(jb, &back2); err != nil {
		t.Fatal(err)
	}
	if want := (benchRow{PartitionKey: r.PartitionKey, RowKey: r.RowKey, Name: r.Name, Email: r.Email, Department: r.Department, Age: r.Age, Visits: r.Visits, Salary: r.Salary, Score: r.Score, Active: r.Active, Joined: r.Joined, ID: r.ID}); !reflect.DeepEqual(back2, want) {
		t.Errorf("encoding/json-encoded row decodes to %#v, want %#v", back2, want)
	}
	zb, _ := json.Marshal(toEDM(&r))
	var back benchRow
	if err := c.Unmarshal(zb, &back); err != nil {
		t.Fatal(err)
	}
	if r.ETag, r.Timestamp = "", (time.Time{}); !reflect.DeepEqual(back, r) {
		t.Errorf("aztables-encoded row decodes to %#v, want %#v", back, r)
	}
}
