package entity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// A value or an entity over one of Azure's limits that tablekit can store
// another way is refused with that way named: a blob-backed field
// (patterns.LargeEntities) for a long String or Binary value or an entity
// over 1 MiB, patterns.WideEntities for more than 252 properties.
func TestLimitErrorsNameTheWayOut(t *testing.T) {
	type Order struct {
		PartitionKey, RowKey string
		Items                string
		Scan                 []byte
	}
	big := func(n int) func(int) entity.Value {
		return func(int) entity.Value { return entity.String(strings.Repeat("x", n)) }
	}
	for _, c := range []struct {
		name string
		err  func() error
		want []string
	}{
		{"String field over 32,768 units", func() error {
			_, err := entity.Marshal(Order{PartitionKey: "p", RowKey: "r", Items: strings.Repeat("i", 78001)})
			return err
		}, []string{"Order.Items", "rule: string length", "`table:\"Items,blob\"`", "patterns.LargeEntities"}},
		{"Binary field over 64 KiB", func() error {
			_, err := entity.Marshal(Order{PartitionKey: "p", RowKey: "r", Scan: make([]byte, 64<<10+1)})
			return err
		}, []string{"Order.Scan", "rule: binary size", "`table:\"Scan,blob\"`", "patterns.LargeEntities"}},
		{"String value of an entity.Entity", func() error {
			_, err := bag(1, big(40000)).MarshalJSON()
			return err
		}, []string{"rule: string length", ",blob\"`", "patterns.LargeEntities"}},
		{"Binary value of an entity.Entity", func() error {
			_, err := bag(1, func(int) entity.Value { return entity.Binary(make([]byte, 64<<10+1)) }).MarshalJSON()
			return err
		}, []string{"rule: binary size", ",blob\"`", "patterns.LargeEntities"}},
		{"entity over 1 MiB", func() error {
			_, err := bag(40, big(30000)).MarshalJSON()
			return err
		}, []string{"rule: entity size", ",blob\"`", "patterns.LargeEntities"}},
		{"253 properties", func() error {
			_, err := bag(253, func(int) entity.Value { return entity.Int32(1) }).MarshalJSON()
			return err
		}, []string{"rule: property count", "patterns.WideEntities"}},
	} {
		err := c.err()
		if !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("%s: %v, want ErrInvalidEntity", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}
