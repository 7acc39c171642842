package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// ixEmployee is the guide's employee of the index patterns: department as
// PartitionKey, "empid_" + id as RowKey.
type ixEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
	EmployeeID   string
	FirstName    string
	LastName     string
	Age          int
	Email        string
}

func ixEmp(dept, id, first, last, email string, age int) ixEmployee {
	return ixEmployee{PartitionKey: dept, RowKey: "empid_" + id, EmployeeID: id, FirstName: first, LastName: last, Email: email, Age: age}
}

// ixEmailIndex is the guide's unique email index; its copies leave out Age,
// as the guide's "you don't necessarily need to duplicate all the
// properties" example does.
func ixEmailIndex() patterns.Index[ixEmployee] {
	return patterns.Index[ixEmployee]{
		Name: "email", Unique: true,
		Key:   func(e *ixEmployee) string { return e.Email },
		Props: []string{"EmployeeID", "FirstName", "LastName", "Email"},
	}
}

func ixLastNameIndex() patterns.Index[ixEmployee] {
	return patterns.Index[ixEmployee]{Name: "lastname", Key: func(e *ixEmployee) string { return e.LastName }}
}

func newIndexedTable(t *testing.T) (*patterns.IndexedTable[ixEmployee], *tablekit.RequestCounter) {
	t.Helper()
	return ixFixture(t, func(acct *tablekit.Account, table string) (*patterns.IndexedTable[ixEmployee], error) {
		return patterns.NewIndexedTable(acct, table,
			[]patterns.Index[ixEmployee]{ixEmailIndex(), ixLastNameIndex()},
			&patterns.IndexedTableOptions{Primary: "empid"})
	})
}

func ixIDs(t *testing.T, seq func(yield func(ixEmployee, error) bool)) []string {
	t.Helper()
	var out []string
	for e, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.EmployeeID)
	}
	return out
}

func TestIndexedTableGuideQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newIndexedTable(t)

	jones := ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34)
	must(t, x.Insert(ctx, &jones, nil))
	requests(t, c, 1, "Insert with two indexes")
	if jones.ETag == "" {
		t.Error("Insert did not set the ETag")
	}
	for _, e := range []ixEmployee{
		ixEmp("Sales", "000100", "Ann", "Abbot", "abbota@contoso.com", 41),
		ixEmp("Sales", "000150", "Al", "Jones", "alj@contoso.com", 29),
		ixEmp("Sales", "000199", "Bea", "Brown", "brownb@contoso.com", 50),
		ixEmp("Sales", "000200", "Aaron", "Adams", "adamsa@contoso.com", 23),
		ixEmp("Sales", "000099", "Zed", "Zane", "zanez@contoso.com", 60),
		ixEmp("HR", "000120", "Amy", "Jones", "amyj@contoso.com", 38),
	} {
		must(t, x.Insert(ctx, &e, nil))
	}
	c.Reset()

	// The guide's two point queries.
	byID, err := x.Lookup(ctx, "empid", "Sales", "000223", nil)
	if err != nil || byID.Email != "jonesj@contoso.com" || byID.Age != 34 {
		t.Fatalf("Lookup empid 000223 = %+v, %v", byID, err)
	}
	requests(t, c, 1, "Lookup by employee id")
	// The primary prefix takes the value, as every index does; the whole
	// RowKey is what Get takes.
	if _, err := x.Lookup(ctx, "empid", "Sales", "empid_000223", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Lookup(empid, the RowKey empid_000223) = %v, want ErrNotFound (RowKey empid_empid_000223)", err)
	}
	if g, err := x.Get(ctx, "Sales", "empid_000223", nil); err != nil || g.Email != "jonesj@contoso.com" {
		t.Errorf("Get(empid_000223) = %+v, %v", g, err)
	}
	requests(t, c, 2, "Lookup by the RowKey, Get")
	byEmail, err := x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Lookup by email")
	if byEmail.RowKey != "empid_000223" || byEmail.PartitionKey != "Sales" || byEmail.FirstName != "John" {
		t.Errorf("Lookup by email = %+v, want the primary's keys and projected fields", byEmail)
	}
	if byEmail.Age != 0 || byEmail.ETag != "" {
		t.Errorf("Lookup by email returned Age %d, ETag %q; the copy projects Age out and has no primary ETag", byEmail.Age, byEmail.ETag)
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "nobody@contoso.com", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Lookup of a missing email = %v, want ErrNotFound", err)
	}
	c.Reset()

	// Employees whose email starts with "a", in email order.
	if got, want := fmt.Sprint(ixIDs(t, x.Prefix(ctx, "email", "Sales", "a", nil))), "[000100 000200 000150]"; got != want {
		t.Errorf(`Prefix(email, "a") = %s, want %s (email order)`, got, want)
	}
	requests(t, c, 1, "email prefix range")
	// Ids 000100 to 000199, in id order.
	if got, want := fmt.Sprint(ixIDs(t, x.Between(ctx, "empid", "Sales", "000100", "000199", nil))), "[000100 000150 000199]"; got != want {
		t.Errorf("Between(empid, 000100, 000199) = %s, want %s", got, want)
	}
	requests(t, c, 1, "employee id range")
	// The same range through a secondary index, and a non-unique index.
	if got, want := fmt.Sprint(ixIDs(t, x.Between(ctx, "email", "Sales", "a", "alj@contoso.com", nil))), "[000100 000200 000150]"; got != want {
		t.Errorf("Between(email) = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ixIDs(t, x.Find(ctx, "lastname", "Sales", "Jones", nil))), "[000150 000223]"; got != want {
		t.Errorf("Find(lastname, Jones) = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ixIDs(t, x.Between(ctx, "lastname", "Sales", "Abbot", "Brown", nil))), "[000100 000200 000199]"; got != want {
		t.Errorf("Between(lastname, Abbot, Brown) = %s, want %s", got, want)
	}
	c.Reset()
	if _, err := x.Lookup(ctx, "lastname", "Sales", "Jones", nil); !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("Lookup on a non-unique index = %v, want ErrInvalidArgument", err)
	}
	if _, err := x.Lookup(ctx, "phone", "Sales", "1", nil); !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("Lookup on an unknown index = %v, want ErrInvalidArgument", err)
	}
	requests(t, c, 0, "lookups refused before sending")
}

func TestIndexedTableUpdateDeleteAndUniqueness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newIndexedTable(t)
	jones := ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34)
	other := ixEmp("Sales", "000224", "Kim", "Akers", "akersk@contoso.com", 30)
	for _, e := range []*ixEmployee{&jones, &other} {
		if err := x.Insert(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Reset()

	// A duplicate email fails the whole transaction: nothing is written.
	dup := ixEmp("Sales", "000300", "Jo", "Smith", "jonesj@contoso.com", 22)
	err := x.Insert(ctx, &dup, nil)
	var conflict *patterns.IndexConflictError
	if !errors.Is(err, tablekit.ErrAlreadyExists) || !errors.As(err, &conflict) || conflict.Index != "email" || conflict.Value != "jonesj@contoso.com" {
		t.Fatalf("duplicate email Insert = %v, want an *IndexConflictError for email wrapping ErrAlreadyExists", err)
	}
	requests(t, c, 1, "rejected Insert")
	if _, err := x.Get(ctx, "Sales", "empid_000300", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("after the rejected insert the employee exists: %v", err)
	}
	if got := ixIDs(t, x.Find(ctx, "lastname", "Sales", "Smith", nil)); len(got) != 0 {
		t.Errorf("after the rejected insert the lastname copy exists: %v", got)
	}
	c.Reset()

	// An update that changes the email moves the copy: read + EGT.
	upd, err := x.Update(ctx, "Sales", "empid_000223", func(e *ixEmployee) error {
		e.Email = "john.jones@contoso.com"
		e.Age = 35
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "Update changing an indexed value")
	if upd.ETag == "" || upd.Age != 35 {
		t.Errorf("Update returned %+v", upd)
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("old email still indexed: %v", err)
	}
	if e, err := x.Lookup(ctx, "email", "Sales", "john.jones@contoso.com", nil); err != nil || e.EmployeeID != "000223" {
		t.Errorf("new email lookup = %+v, %v", e, err)
	}
	c.Reset()

	// Taking another employee's email in an update is refused atomically.
	_, err = x.Update(ctx, "Sales", "empid_000224", func(e *ixEmployee) error {
		e.Email = "john.jones@contoso.com"
		e.LastName = "Changed"
		return nil
	}, nil)
	if !errors.As(err, &conflict) || !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Fatalf("Update to a taken email = %v, want *IndexConflictError", err)
	}
	requests(t, c, 2, "rejected Update")
	if e, _ := x.Get(ctx, "Sales", "empid_000224", nil); e.LastName != "Akers" || e.Email != "akersk@contoso.com" {
		t.Errorf("rejected update changed the entity: %+v", e)
	}
	c.Reset()

	// Delete: read + EGT, and every copy goes.
	if err := x.Delete(ctx, &ixEmployee{PartitionKey: "Sales", RowKey: "empid_000223"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "Delete")
	if got := ixIDs(t, x.Prefix(ctx, "email", "Sales", "", nil)); fmt.Sprint(got) != "[000224]" {
		t.Errorf("emails after delete = %v, want [000224]", got)
	}
	if got := ixIDs(t, x.Find(ctx, "lastname", "Sales", "Jones", nil)); len(got) != 0 {
		t.Errorf("lastname copies after delete = %v", got)
	}
	if err := x.Delete(ctx, &ixEmployee{PartitionKey: "Sales", RowKey: "empid_000223"}, &patterns.WriteOptions{Unconditional: true}); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
}

func TestIndexedTableConcurrentUpdatesKeepCopiesInStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, _ := newIndexedTable(t)
	e := ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34)
	must(t, x.Insert(ctx, &e, nil))
	names := []string{"Smith", "Brown", "Green", "White", "Black", "Gray"}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := x.Update(ctx, "Sales", "empid_000223", func(e *ixEmployee) error {
				e.LastName = n
				e.Age++
				return nil
			}, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	final, err := x.Get(ctx, "Sales", "empid_000223", nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.Age != 34+len(names) {
		t.Errorf("Age = %d, want %d: an update was lost", final.Age, 34+len(names))
	}
	all := ixIDs(t, x.Prefix(ctx, "lastname", "Sales", "", nil))
	if len(all) != 1 {
		t.Fatalf("lastname copies = %v, want exactly one", all)
	}
	if got := ixIDs(t, x.Find(ctx, "lastname", "Sales", final.LastName, nil)); fmt.Sprint(got) != "[000223]" {
		t.Errorf("the copy does not carry the final last name %q: %v", final.LastName, got)
	}
}

func TestIndexedTableRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	acct := testenv.Account(t)
	key := func(e *ixEmployee) string { return e.Email }
	many := make([]patterns.Index[ixEmployee], 50)
	for i := range many {
		many[i] = patterns.Index[ixEmployee]{Name: fmt.Sprintf("i%d", i), Key: key}
	}
	cases := []struct {
		name    string
		indexes []patterns.Index[ixEmployee]
		opts    *patterns.IndexedTableOptions
	}{
		{"50 indexes pass the 100-operation limit", many, nil},
		{"name with separator", []patterns.Index[ixEmployee]{{Name: "e_mail", Key: key}}, nil},
		{"no key func", []patterns.Index[ixEmployee]{{Name: "email"}}, nil},
		{"duplicate name", []patterns.Index[ixEmployee]{{Name: "email", Key: key}, {Name: "email", Key: key}}, nil},
		{"name equals primary", []patterns.Index[ixEmployee]{{Name: "empid", Key: key}}, &patterns.IndexedTableOptions{Primary: "empid"}},
		{"unknown projected property", []patterns.Index[ixEmployee]{{Name: "email", Key: key, Props: []string{"Phone"}}}, nil},
		{"other table on an intra-partition index", []patterns.Index[ixEmployee]{{Name: "email", Key: key, Table: "Other"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := patterns.NewIndexedTable(acct, "Employees", tc.indexes, tc.opts); err == nil {
				t.Error("NewIndexedTable accepted it")
			}
		})
	}
	if _, err := patterns.NewIndexedTable(acct, "Employees", many[:49], nil); err != nil {
		t.Errorf("49 indexes refused: %v", err)
	}
	x, err := patterns.NewIndexedTable(acct, "Employees", []patterns.Index[ixEmployee]{ixEmailIndex()}, &patterns.IndexedTableOptions{Primary: "empid"})
	if err != nil {
		t.Fatal(err)
	}
	bad := ixEmployee{PartitionKey: "Sales", RowKey: "000223"}
	if err := x.Insert(context.Background(), &bad, nil); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Insert of a RowKey without the primary prefix = %v, want ErrInvalidKey", err)
	}
}
