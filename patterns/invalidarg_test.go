package patterns_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestLocalRefusalsAreInvalidArguments: an argument the repositories
// refuse themselves wraps tablekit.ErrInvalidArgument, never
// tablekit.ErrBadRequest (the service's 400), and costs no request, so a
// caller can tell a bad argument from a rejected request.
func TestLocalRefusalsAreInvalidArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	name := testenv.TableName(t)
	tbl, err := patterns.NewTable[Employee](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := patterns.NewDataSeries[int64](acct, name, 24, nil)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := patterns.NewLogTail[ExpenseClaim](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := patterns.NewBucketed[Employee](acct, name, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := patterns.NewIndexedTable[Employee](acct, name, []patterns.Index[Employee]{
		{Name: "lastname", Key: func(e *Employee) string { return e.LastName }},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"data series slot 24 of 24", func() error {
			return ds.Upsert(ctx, "Sales", "000123", map[int]int64{24: 1}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge})
		}},
		{"data series slot -1", func() error { _, err := ds.Add(ctx, "Sales", "000123", -1, 1, nil); return err }},
		{"Latest(0)", func() error { _, err := lt.Latest(ctx, "empid", 0, nil); return err }},
		{"Latest(1001)", func() error { _, err := lt.Latest(ctx, "empid", 1001, nil); return err }},
		{"Top 1001", func() error {
			_, err := tbl.Page(ctx, keys.PK().Eq("Sales"), "", &patterns.QueryOptions{Top: 1001})
			return err
		}},
		{"negative Limit", func() error {
			_, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("Sales"), &patterns.QueryOptions{Limit: -1}))
			return err
		}},
		{"bad property name in Select", func() error {
			_, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("Sales"), &patterns.QueryOptions{Select: []string{"Name,Age"}}))
			return err
		}},
		{"one bucket", func() error { _, err := patterns.NewBucketed[Employee](acct, name, 1, nil); return err }},
		{"bucketed row filter with a PartitionKey", func() error {
			_, err := patterns.Collect(b.Query(ctx, "Sales", keys.PK().Eq("x"), nil))
			return err
		}},
		{"NewTable without an account", func() error { _, err := patterns.NewTable[Employee](nil, name, nil); return err }},
		{"NewCompoundKeys without an account", func() error {
			_, err := patterns.NewCompoundKeys[struct{ ID string }, Employee](nil, name, "empid_{ID}", nil)
			return err
		}},
		{"NewDenormalization without functions", func() error {
			_, err := patterns.NewDenormalization[Employee, Employee](acct, name, nil, nil, nil, nil)
			return err
		}},
		{"an index without a Key function", func() error {
			_, err := patterns.NewIndexedTable[Employee](acct, name, []patterns.Index[Employee]{{Name: "email"}}, nil)
			return err
		}},
		{"Lookup on an unknown index", func() error { _, err := ix.Lookup(ctx, "phone", "Sales", "1", nil); return err }},
		{"Lookup on a non-unique index", func() error { _, err := ix.Lookup(ctx, "lastname", "Sales", "Jones", nil); return err }},
		{"a bad key (ErrInvalidKey)", func() error { _, err := tbl.Get(ctx, "a/b", "1", nil); return err }},
		{"a malformed token (ErrInvalidToken)", func() error {
			_, err := tbl.Page(ctx, keys.PK().Eq("Sales"), "not a token!", nil)
			return err
		}},
	} {
		err := tc.call()
		if !errors.Is(err, tablekit.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
		if errors.Is(err, tablekit.ErrBadRequest) {
			t.Errorf("%s: %v wraps ErrBadRequest, the service's 400", tc.name, err)
		}
	}
	requests(t, c, 0, "refused calls")
}
