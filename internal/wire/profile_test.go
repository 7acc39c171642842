package wire

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
)

// TestProfiles: what each target accepts, through the one validation.
func TestProfiles(t *testing.T) {
	longRK := strings.Repeat("r", 256)
	entity := []byte(`{"PartitionKey":"p","RowKey":"r"}`)
	// 100 inserts of about 30 KB: about 3 MB, under 4 MiB, over 2 MB.
	big := make([]Op, 100)
	for i := range big {
		big[i] = Op{Type: OpInsert, PartitionKey: "p", RowKey: strconv.Itoa(i), Entity: make([]byte, 30000)}
	}
	cases := []struct {
		name            string
		check           func(p *Profile) error
		storage, cosmos error // nil: accepted
	}{
		{"a 256-byte RowKey", func(p *Profile) error {
			return p.ValidateOp(Op{Type: OpInsert, PartitionKey: "p", RowKey: longRK, Entity: entity})
		}, nil, tablekit.ErrInvalidKey},
		{"a 256-byte RowKey in a transaction", func(p *Profile) error {
			return p.ValidateTransaction([]Op{{Type: OpInsert, PartitionKey: "p", RowKey: "a", Entity: entity}, {Type: OpDelete, PartitionKey: "p", RowKey: longRK}})
		}, nil, tablekit.ErrInvalidKey},
		{"a 3 MB transaction", func(p *Profile) error { return p.ValidateTransaction(big) }, nil, tablekit.ErrInvalidTransaction},
		{"a transaction across partitions", func(p *Profile) error {
			return p.ValidateTransaction([]Op{{Type: OpDelete, PartitionKey: "a", RowKey: "1"}, {Type: OpDelete, PartitionKey: "b", RowKey: "1"}})
		}, tablekit.ErrInvalidTransaction, tablekit.ErrInvalidTransaction},
		{"a mixed-case table name (the names are case-sensitive on Cosmos DB)", func(p *Profile) error { return p.ValidateTableName("Orders") }, nil, nil},
		{"a lowercase table name", func(p *Profile) error { return p.ValidateTableName("orders") }, nil, nil},
		{"a property Cosmos DB reserves", func(p *Profile) error {
			return p.ValidateOp(Op{Type: OpUpsertMerge, PartitionKey: "p", RowKey: "r", Entity: []byte(`{"PartitionKey":"p","RowKey":"r","ID@odata.type":"Edm.Int64","ID":"7"}`)})
		}, nil, tablekit.ErrInvalidEntity},
		{"a property Cosmos DB reserves, in a transaction", func(p *Profile) error {
			return p.ValidateTransaction([]Op{{Type: OpInsert, PartitionKey: "p", RowKey: "a", Entity: entity}, {Type: OpInsert, PartitionKey: "p", RowKey: "b", Entity: []byte(`{"PartitionKey":"p","RowKey":"b","etag":"x"}`)}})
		}, nil, tablekit.ErrInvalidEntity},
		{"a property whose name only contains a reserved one", func(p *Profile) error {
			return p.ValidateOp(Op{Type: OpInsert, PartitionKey: "p", RowKey: "r", Entity: []byte(`{"PartitionKey":"p","RowKey":"r","EmployeeID":1,"Etag":{"nested":"ID"}}`)})
		}, nil, nil},
		{"a pattern relying on key order", func(p *Profile) error { return p.RequireSortedResults("LogTail.Latest") }, nil, ErrUnsortedResults},
	}
	for _, c := range cases {
		for _, pc := range []struct {
			p    *Profile
			want error
		}{{StorageProfile, c.storage}, {CosmosProfile, c.cosmos}} {
			err := c.check(pc.p)
			if pc.want == nil && err != nil || pc.want != nil && !errors.Is(err, pc.want) {
				t.Errorf("%s on %s: %v, want %v", c.name, pc.p, err, pc.want)
			}
		}
	}
	if ProfileFor(true) != CosmosProfile || ProfileFor(false) != StorageProfile {
		t.Error("ProfileFor does not follow the endpoint")
	}
	if err := CosmosProfile.RequireSortedResults("LogTail.Latest"); err == nil || !strings.Contains(err.Error(), "LogTail.Latest") || !strings.Contains(err.Error(), "Cosmos") {
		t.Errorf("the refusal does not say what and where: %v", err)
	}
}
