package entity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// The guide's mixed partition: a department and its employees.
type Department struct {
	PartitionKey   string
	RowKey         string
	DepartmentName string
	EmployeeCount  int32
}

type EmployeeV1 struct {
	PartitionKey, RowKey string
	FirstName, LastName  string
	Age                  int32
}

type Employee struct {
	PartitionKey, RowKey string
	FirstName, LastName  string
	Age                  int32
	Email                string
}

func newRegistry(t *testing.T, opts *entity.RegistryOptions) *entity.Registry {
	t.Helper()
	r := entity.NewRegistry(opts)
	for _, reg := range []struct {
		k entity.Kind
		v any
	}{
		{entity.Kind{Name: "Department"}, Department{}},
		{entity.Kind{Name: "Employee", Version: 1}, EmployeeV1{}},
		{entity.Kind{Name: "Employee", Version: 2}, Employee{}},
	} {
		if err := r.Register(reg.k, reg.v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestRegistryResolvesMixedPartition(t *testing.T) {
	r := newRegistry(t, nil)
	written := []any{
		Department{"Sales", "Department", "Sales", 2},
		&EmployeeV1{"Sales", "000123", "Ann", "Lee", 34},
		Employee{"Sales", "000124", "Bo", "Ng", 41, "bo@contoso.com"},
	}
	var rows [][]byte
	body := []byte(`{"odata.metadata":"m","value":[`)
	for i, v := range written {
		b, err := r.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, b)
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, b...)
	}
	body = append(body, "]}"...)
	if !strings.Contains(string(rows[1]), `"EntityType":"Employee.v1"`) || !strings.Contains(string(rows[2]), `"EntityType":"Employee.v2"`) {
		t.Fatalf("discriminators: %s / %s", rows[1], rows[2])
	}
	for name, resolve := range map[string]func() ([]any, error){
		"ResolveAll":  func() ([]any, error) { return r.ResolveAll(rows) },
		"ResolvePage": func() ([]any, error) { return r.ResolvePage(body) },
	} {
		got, err := resolve()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 3 {
			t.Fatalf("%s: %d rows", name, len(got))
		}
		d, ok1 := got[0].(*Department)
		e1, ok2 := got[1].(*EmployeeV1)
		e2, ok3 := got[2].(*Employee)
		if !ok1 || !ok2 || !ok3 || d.EmployeeCount != 2 || e1.FirstName != "Ann" || e2.Email != "bo@contoso.com" {
			t.Errorf("%s: got %#v %#v %#v", name, got[0], got[1], got[2])
		}
	}
}

func TestRegistryVersionsAndUnknown(t *testing.T) {
	r := entity.NewRegistry(&entity.RegistryOptions{Property: "Kind"})
	// One type reads both versions and writes the newest.
	if err := r.Register(entity.Kind{Name: "Employee", Version: 1}, Employee{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(entity.Kind{Name: "Employee", Version: 2}, &Employee{}); err != nil {
		t.Fatal(err)
	}
	if k, _ := r.KindOf(Employee{}); k.String() != "Employee.v2" {
		t.Errorf("KindOf = %v", k)
	}
	v, err := r.Resolve([]byte(`{"PartitionKey":"p","RowKey":"r","Kind":"Employee.v1","FirstName":"Old"}`))
	if e, ok := v.(*Employee); err != nil || !ok || e.FirstName != "Old" {
		t.Errorf("v1 row: %#v %v", v, err)
	}
	_, err = r.Resolve([]byte(`{"PartitionKey":"p","RowKey":"r","Kind":"Robot.v1"}`))
	if !errors.Is(err, entity.ErrUnknownKind) || !errors.Is(err, entity.ErrInvalidEntity) {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = r.Resolve([]byte(`{"PartitionKey":"p","RowKey":"r"}`))
	if !errors.Is(err, entity.ErrUnknownKind) {
		t.Errorf("no discriminator: %v", err)
	}
	_, err = r.ResolveAll([][]byte{[]byte(`{"Kind":"Employee.v2"}`), []byte(`{"Kind":7}`)})
	var re *entity.RowError
	if !errors.As(err, &re) || re.Index != 1 {
		t.Errorf("bad row 1: %v", err)
	}
	lenient := entity.NewRegistry(&entity.RegistryOptions{DecodeUnknown: true})
	v, err = lenient.Resolve([]byte(`{"PartitionKey":"p","RowKey":"r","EntityType":"Robot","Arms":4}`))
	if e, ok := v.(*entity.Entity); err != nil || !ok || e.Properties["Arms"] != entity.Int32(4) {
		t.Errorf("DecodeUnknown: %#v %v", v, err)
	}
	if _, err := r.Marshal(Department{}); !errors.Is(err, entity.ErrUnknownKind) {
		t.Errorf("Marshal of an unregistered type: %v", err)
	}
}

func TestRegistryRejects(t *testing.T) {
	type HasKind struct {
		PartitionKey, RowKey string
		EntityType           string
	}
	r := entity.NewRegistry(nil)
	if err := r.Register(entity.Kind{Name: "X"}, HasKind{}); !errors.Is(err, entity.ErrInvalidEntity) {
		t.Errorf("type with the discriminator as a property: %v", err)
	}
	if err := r.Register(entity.Kind{Name: "A.B"}, Employee{}); err == nil {
		t.Error("kind name with a dot accepted")
	}
	_ = r.Register(entity.Kind{Name: "E"}, Employee{})
	if err := r.Register(entity.Kind{Name: "E"}, Department{}); err == nil {
		t.Error("kind registered twice for two types")
	}
}

func TestParseKind(t *testing.T) {
	for s, want := range map[string]entity.Kind{
		"Employee":     {Name: "Employee"},
		"Employee.v2":  {Name: "Employee", Version: 2},
		"Employee.v10": {Name: "Employee", Version: 10},
	} {
		if k, err := entity.ParseKind(s); err != nil || k != want || k.String() != s {
			t.Errorf("ParseKind(%q) = %v, %v", s, k, err)
		}
	}
	for _, s := range []string{"", ".v2", "a.b", "Employee.v0", "Employee.vx"} {
		if _, err := entity.ParseKind(s); err == nil {
			t.Errorf("ParseKind(%q) succeeded", s)
		}
	}
}
