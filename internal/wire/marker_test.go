package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

func entityJSON(t *testing.T, props int) []byte {
	t.Helper()
	e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{}}
	for i := range props {
		e.Properties[fmt.Sprintf("P%03d", i)] = entity.Int64(int64(i)) // annotated: two members each
	}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMarkRecordsIDAfterAnchor(t *testing.T) {
	body := entityJSON(t, 3)
	ins, id := mark(Op{Type: OpInsert, PartitionKey: "p", RowKey: "r", Entity: body, Owned: true})
	if id == "" || strings.Join(ReadLog(ins.Entity), " ") != id {
		t.Fatalf("insert marker: id %q, log %q", id, ReadLog(ins.Entity))
	}
	rep, id := mark(Op{Type: OpReplace, PartitionKey: "p", RowKey: "r", Entity: body, ETag: `W/"1"`, Owned: true})
	if log := ReadLog(rep.Entity); len(log) != 2 || log[0] != anchorOf(nil, `W/"1"`) || log[1] != id {
		t.Fatalf("replace marker: id %q, log %q", id, log)
	}
	if markVerdict(rep, id, rep.Entity) != yes {
		t.Error("a read-back holding the id is not settled as landed")
	}
	other, _ := mark(Op{Type: OpReplace, PartitionKey: "p", RowKey: "r", Entity: body, ETag: `W/"1"`, Owned: true})
	if markVerdict(rep, id, other.Entity) != no {
		t.Error("another write that consumed the same version does not refute ours")
	}
	if markVerdict(rep, id, body) != unknown {
		t.Error("a state with no log settles the write")
	}
	for _, op := range []Op{
		{Type: OpUpsertReplace, Entity: body},
		{Type: OpReplace, Entity: body},              // If-Match *
		{Type: OpMerge, Entity: body, ETag: "*"},     // If-Match *
		{Type: OpInsert, Entity: body, Unique: true}, // settled by its content
		{Type: OpDelete, ETag: `W/"1"`},
		{Type: OpInsert, Entity: body},                 // the caller's own entity
		{Type: OpReplace, Entity: body, ETag: `W/"1"`}, // the caller's own entity
	} {
		if _, id := mark(op); id != "" {
			t.Errorf("%v (ETag %q, Unique %v) was marked", op.Type, op.ETag, op.Unique)
		}
	}
}

func TestMarkLeavesFullEntityUnmarked(t *testing.T) {
	for _, n := range []int{200, 251, 252} {
		body := entityJSON(t, n)
		_, id := mark(Op{Type: OpInsert, PartitionKey: "p", RowKey: "r", Entity: body, Owned: true})
		if want := n < 252; (id != "") != want {
			t.Errorf("%d properties: marked %v, want %v", n, id != "", want)
		}
	}
}

func TestTopLevelMembers(t *testing.T) {
	for in, want := range map[string]int{
		`{}`:      0,
		`{"a":1}`: 1,
		`{"a":"x:y","b":{"c":1},"d":[1,{"e":2}]}`: 3,
		`{"a\":b":"\"c\":d"}`:                     1,
	} {
		if got := topLevelMembers([]byte(in)); got != want {
			t.Errorf("topLevelMembers(%s) = %d, want %d", in, got, want)
		}
	}
}
