package tables_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/emulator/internal/tables"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/integration/azurite"
)

// sas is an account SAS query string with every permission, for the
// benchmarks' plain HTTP requests.
func sas(b testing.TB) string {
	cred, err := aztables.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		b.Fatal(err)
	}
	qp, err := aztables.AccountSASSignatureValues{
		Version:       aztables.SASVersion,
		Protocol:      aztables.SASProtocolHTTPSandHTTP,
		Permissions:   aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true}.String(),
		Services:      "t",
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
		StartTime:     time.Now().Add(-time.Hour).UTC(),
		ExpiryTime:    time.Now().Add(24 * time.Hour).UTC(),
	}.Sign(cred)
	if err != nil {
		b.Fatal(err)
	}
	return qp.Encode()
}

// benchEntity is an entity whose JSON (as MarshalJSON writes it, with
// its annotations) is about size bytes: a few typed properties and a
// string filling the rest.
func benchEntity(pk, rk string, size int) entity.Entity {
	e := entity.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]entity.Value{
		"Name":    entity.String("name " + rk),
		"Count":   entity.Int32(42),
		"Total":   entity.Int64(1 << 40),
		"Price":   entity.Double(9.99),
		"Created": entity.DateTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)),
	}}
	j, _ := e.MarshalJSON()
	if pad := size - len(j) - len(`,"Body":""`); pad > 0 {
		e.Properties["Body"] = entity.String(strings.Repeat("x", pad))
	}
	return e
}

// benchPartitions is the big table's partitions of 1,000 entities.
var benchPartitions = 1000

var (
	millionOnce sync.Once
	million     *server
)

// millionTable is a service holding table "big": 1,000 partitions of
// 1,000 entities (256 bytes of JSON each), loaded once per benchmark run.
func millionTable(b *testing.B) *server {
	millionOnce.Do(func() {
		// Not start's: the server outlives the first benchmark that
		// loads it, until the process ends.
		svc := tables.New(tables.Config{Account: azurite.AccountName})
		ts := httptest.NewServer(svc)
		million = &server{url: ts.URL + "/" + azurite.AccountName, svc: svc}
		es := make([]entity.Entity, 0, 1000)
		for p := range benchPartitions {
			es = es[:0]
			for r := range 1000 {
				es = append(es, benchEntity(fmt.Sprintf("p%04d", p), fmt.Sprintf("r%06d", r), 256))
			}
			million.svc.Put("big", es)
		}
	})
	return million
}

func get(b *testing.B, u string) []byte {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%d %v %.200s", resp.StatusCode, err, body)
	}
	return body
}

// BenchmarkPage1000Of1M reads one 1,000-entity page from the middle of a
// 1,000,000-entity table over loopback HTTP: a partition's rows from a
// RowKey (a range query) and a range of partitions.
func BenchmarkPage1000Of1M(b *testing.B) {
	s := millionTable(b)
	q := sas(b)
	for _, c := range []struct{ name, filter string }{
		{"partition", "PartitionKey eq 'p0500' and RowKey ge 'r000000'"},
		{"partitions", "PartitionKey ge 'p0500' and PartitionKey lt 'p0502'"},
	} {
		// The service alone, without the network and the client.
		b.Run(c.name+"/handler", func(b *testing.B) {
			u := s.url + "/big()?$top=1000&$filter=" + url.QueryEscape(c.filter) + "&" + q
			b.ResetTimer()
			for range b.N {
				w := httptest.NewRecorder()
				s.svc.ServeHTTP(w, httptest.NewRequest(http.MethodGet, u, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
		b.Run(c.name+"/http", func(b *testing.B) {
			u := s.url + "/big()?$top=1000&$filter=" + url.QueryEscape(c.filter) + "&" + q
			if n := strings.Count(string(get(b, u)), `"PartitionKey"`); n != 1000 {
				b.Fatalf("page of %d entities", n)
			}
			b.ResetTimer()
			for range b.N {
				get(b, u)
			}
		})
	}
}

// BenchmarkPointRead reads one entity of the 1,000,000 over HTTP.
func BenchmarkPointRead(b *testing.B) {
	s := millionTable(b)
	u := s.url + "/big(PartitionKey='p0500',RowKey='r000500')?" + sas(b)
	b.ResetTimer()
	for range b.N {
		get(b, u)
	}
}

// BenchmarkPointWrite upserts (PUT without If-Match) 1 KiB entities over
// HTTP, each to a new RowKey.
func BenchmarkPointWrite(b *testing.B) {
	s := millionTable(b)
	q := sas(b)
	body, err := benchEntity("w", "", 1024).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		req, _ := http.NewRequest(http.MethodPut, s.url+"/big(PartitionKey='w',RowKey='"+fmt.Sprint(i)+"')?"+q, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b.Fatalf("upsert: %d", resp.StatusCode)
		}
	}
}

// BenchmarkMemoryPerEntity stores b.N entities of 1 KiB of JSON (six
// properties, a ~770-character string among them), 1,000 a partition,
// and reports the heap each costs in the store, its strings included
// (the figure is steady from about 100,000 entities: -benchtime 100000x).
func BenchmarkMemoryPerEntity(b *testing.B) {
	svc := tables.New(tables.Config{Account: azurite.AccountName})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	batch := make([]entity.Entity, 0, 1000)
	for i := range b.N {
		batch = append(batch, benchEntity(fmt.Sprintf("p%06d", i/1000), fmt.Sprintf("r%06d", i), 1024))
		if len(batch) == cap(batch) || i == b.N-1 {
			svc.Put("mem", batch)
			batch = batch[:0]
		}
	}
	b.StopTimer()
	batch = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "B/entity")
	runtime.KeepAlive(svc)
}
