package emulator_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// batchOp is one operation of an entity group transaction.
type batchOp struct {
	method  string // POST (insert), PUT (replace or upsert), MERGE, DELETE
	pk, rk  string
	body    []byte // the entity (POST: with its keys)
	ifMatch etagKind
	// table, when set, is the table the operation addresses instead of
	// the case's.
	table string
}

func (o batchOp) key() string { return o.pk + "\x00" + o.rk }

// batch is a transaction's operations.
type batch struct {
	ops []batchOp
}

func (b *batch) String() string {
	var s strings.Builder
	for i, o := range b.ops {
		if i > 0 {
			s.WriteString("; ")
		}
		if i >= 8 && len(b.ops) > 10 {
			fmt.Fprintf(&s, "... %d operations in all", len(b.ops))
			break
		}
		fmt.Fprintf(&s, "%s (%q,%q)", o.method, o.pk, o.rk)
		if o.ifMatch != noEtag {
			s.WriteString(" If-Match " + map[etagKind]string{etagCurrent: "current", etagStale: "stale", etagStar: "*"}[o.ifMatch])
		}
		if len(o.body) > 0 {
			body := string(o.body)
			if len(body) > 200 {
				body = body[:200] + fmt.Sprintf("...(%d bytes)", len(o.body))
			}
			s.WriteString(" " + body)
		}
	}
	return s.String()
}

// build is the $batch body for the service at base (its operations'
// URLs are absolute) and its Content-Type, as aztables writes it.
func (b *batch) build(base, table string, etags map[string][]string) ([]byte, string) {
	const outer, inner = "batch_0f8fad5b-d9cb-469f-a165-70867728950e", "changeset_7c9e6679-7425-40de-944b-e07fc1f90ae7"
	var w bytes.Buffer
	w.WriteString("--" + outer + "\r\nContent-Type: multipart/mixed; boundary=" + inner + "\r\n\r\n")
	for _, o := range b.ops {
		t := table
		if o.table != "" {
			t = o.table
		}
		u := base + "/" + t
		if o.method != http.MethodPost {
			u += strings.TrimPrefix(entityPath(o.pk, o.rk), "/T")
		}
		w.WriteString("--" + inner + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		w.WriteString(o.method + " " + u + " HTTP/1.1\r\n")
		w.WriteString("Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n")
		switch o.ifMatch {
		case etagCurrent, etagStale:
			hist := etags[o.key()]
			i := len(hist) - 1
			if o.ifMatch == etagStale {
				i--
			}
			if i >= 0 {
				w.WriteString("If-Match: " + hist[i] + "\r\n")
			}
		case etagStar:
			w.WriteString("If-Match: *\r\n")
		}
		if o.method == http.MethodPost {
			w.WriteString("Prefer: return-no-content\r\n")
		}
		if o.body != nil {
			w.WriteString("Content-Type: application/json\r\n\r\n")
			w.Write(o.body)
			w.WriteString("\r\n")
		} else {
			w.WriteString("\r\n")
		}
	}
	w.WriteString("--" + inner + "--\r\n--" + outer + "--\r\n")
	return w.Bytes(), "multipart/mixed; boundary=" + outer
}

func batchRequest(label string, ops ...batchOp) *request {
	return &request{label: label, method: http.MethodPost, path: "/$batch", batch: &batch{ops: ops}}
}

func insertOp(e *gentity) batchOp {
	return batchOp{method: http.MethodPost, pk: e.pk, rk: e.rk, body: e.body()}
}

// testDiffBatches sends transactions, valid and invalid, and reads back
// what they left.
func testDiffBatches(t *testing.T, rg *rig) {
	g := newGen(rg.seed, "batches")
	c := rg.newCase(t, "diffbatch")
	mk := func(pk string, i int) *gentity {
		return g.entity(pk, fmt.Sprintf("r%03d", i), filterSchema[:5])
	}

	// Valid: inserts, then every kind of change, with If-Match.
	var ops []batchOp
	var base []*gentity
	for i := 0; i < 6; i++ {
		e := mk("p", i)
		base = append(base, e)
		ops = append(ops, insertOp(e))
	}
	c.do(batchRequest("batch: six inserts", ops...))
	upd := func(method string, e *gentity, im etagKind) batchOp {
		return batchOp{method: method, pk: e.pk, rk: e.rk, body: propsBody(mk(e.pk, 0).props), ifMatch: im}
	}
	c.do(batchRequest("batch: replace, merge, delete, upserts, insert",
		upd(http.MethodPut, base[0], etagCurrent),
		upd("MERGE", base[1], etagStar),
		batchOp{method: http.MethodDelete, pk: base[2].pk, rk: base[2].rk, ifMatch: etagStar},
		upd(http.MethodPut, base[3], noEtag),
		upd("MERGE", &gentity{pk: "p", rk: "new-merge"}, noEtag),
		upd(http.MethodPut, &gentity{pk: "p", rk: "new-put"}, noEtag),
		insertOp(mk("p", 50)),
	))
	c.page(&request{label: "after the valid batches", method: http.MethodGet, path: "/T()"}, 3)

	// Invalid: each must leave the table as it was.
	c.do(batchRequest("batch: two partitions", insertOp(mk("p", 60)), insertOp(mk("q", 61))))
	dup := mk("p", 62)
	c.do(batchRequest("batch: one row twice", insertOp(dup), insertOp(dup)))
	c.do(batchRequest("batch: one row inserted and deleted", insertOp(dup),
		batchOp{method: http.MethodDelete, pk: dup.pk, rk: dup.rk, ifMatch: etagStar}))
	ops = nil
	for i := 0; i < 101; i++ {
		ops = append(ops, insertOp(mk("p", 100+i)))
	}
	c.do(batchRequest("batch: 101 inserts", ops...))
	c.do(batchRequest("batch: 100 inserts", ops[:100]...))
	c.do(batchRequest("batch: third insert exists", insertOp(mk("p", 70)), insertOp(mk("p", 71)), insertOp(base[4]), insertOp(mk("p", 72))))
	c.do(batchRequest("batch: stale If-Match on the second", upd("MERGE", base[4], etagCurrent), upd(http.MethodPut, base[0], etagStale)))
	c.do(batchRequest("batch: update of a missing entity", upd("MERGE", base[5], etagStar), upd(http.MethodPut, &gentity{pk: "p", rk: "absent"}, etagStar)))
	c.do(batchRequest("batch: delete of a missing entity", batchOp{method: http.MethodDelete, pk: "p", rk: "absent", ifMatch: etagStar}))
	c.do(batchRequest("batch: other table", batchOp{method: http.MethodPost, pk: "p", rk: "o", body: mk("p", 80).body(), table: "diffnosuchtable"}))
	bad := mk("p", 81)
	bad.props = append(bad.props, gprop{"Bad-Name", strVal("x")})
	c.do(batchRequest("batch: invalid property name on the second", insertOp(mk("p", 82)), insertOp(bad)))

	// Oversize: more than 4 MiB.
	ops = nil
	big := strings.Repeat("a", 30000)
	for i := 0; i < 80; i++ {
		e := &gentity{pk: "p", rk: fmt.Sprintf("big%03d", i), props: []gprop{{"A", strVal(big)}, {"B", strVal(big)}}}
		ops = append(ops, insertOp(e))
	}
	c.do(batchRequest("batch: 4.8 MB body", ops...))
	c.page(&request{label: "after the invalid batches", method: http.MethodGet, path: "/T()"}, 3)
}
