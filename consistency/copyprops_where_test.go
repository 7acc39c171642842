package consistency

import (
	"errors"
	"strings"
	"testing"
)

// TestCopyPropsWhereArgs: the writer's validation (Queue.Enqueue and
// ValidateSteps run it) refuses what the worker could not apply, so a bad
// step fails at the writer, not in the poison queue.
func TestCopyPropsWhereArgs(t *testing.T) {
	ok := CopyPropsWhereArgs{
		Source: EntityRef{Table: "Departments", PartitionKey: "Contoso", RowKey: "Sales"},
		Table:  "Employees", Filter: "PartitionKey eq 'Contoso'",
		Props: map[string]string{"ManagerPhone": "ManagerPhone"},
		Link:  "DepartmentID", LinkValue: "Contoso/Sales",
	}
	for _, tc := range []struct {
		name  string
		edit  func(a *CopyPropsWhereArgs)
		valid bool
	}{
		{"valid", func(*CopyPropsWhereArgs) {}, true},
		{"no filter: the link alone", func(a *CopyPropsWhereArgs) { a.Filter = "" }, true},
		{"no link", func(a *CopyPropsWhereArgs) { a.Link = "" }, false},
		{"no link value", func(a *CopyPropsWhereArgs) { a.LinkValue = "" }, false},
		{"bad link name", func(a *CopyPropsWhereArgs) { a.Link = "Department ID" }, false},
		{"unterminated filter", func(a *CopyPropsWhereArgs) { a.Filter = "PartitionKey eq 'Contoso" }, false},
		{"bad table", func(a *CopyPropsWhereArgs) { a.Table = "em-ployees" }, false},
		{"bad source", func(a *CopyPropsWhereArgs) { a.Source.RowKey = "a/b" }, false},
		{"no props", func(a *CopyPropsWhereArgs) { a.Props = nil }, false},
		{"a key as target", func(a *CopyPropsWhereArgs) { a.Props = map[string]string{"ManagerPhone": "RowKey"} }, false},
		{"bad expectation", func(a *CopyPropsWhereArgs) { a.Expect = &Expectation{} }, false},
	} {
		a := ok
		a.Props = map[string]string{"ManagerPhone": "ManagerPhone"}
		tc.edit(&a)
		err := ValidateSteps(NewTransaction(CopyPropsWhere(a)))
		switch {
		case tc.valid && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.valid && !errors.Is(err, ErrInvalidArgs):
			t.Errorf("%s: %v, want ErrInvalidArgs", tc.name, err)
		case !tc.valid && !strings.Contains(err.Error(), KindCopyPropsWhere):
			t.Errorf("%s: %v does not name the step", tc.name, err)
		}
	}
	// The link is part of the query the worker sends.
	f, err := (&ok).filter()
	if err != nil || f != "(PartitionKey eq 'Contoso') and (DepartmentID eq 'Contoso/Sales')" {
		t.Errorf("filter = %q, %v", f, err)
	}
}
