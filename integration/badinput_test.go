package integration_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestMain starts the build of tablekit-worker, which
// TestEmployeeDirectoryConverges runs, while the other tests run.
func TestMain(m *testing.M) {
	testenv.Prebuild(workerCommand)
	testenv.Main(m)
}

// Person is an ordinary entity type for the catalogue.
type Person struct {
	PartitionKey, RowKey string
	ETag                 string
	Name                 string
	Photo                []byte
	Born                 time.Time
	Visits               uint64
}

// TestBadInputCatalogue drives hostile and malformed input through every
// public entry point. Each case must fail with its documented typed error
// before any request is sent, and leave the table empty.
func TestBadInputCatalogue(t *testing.T) {
	ctx := context.Background()
	acct, counter := testenv.CountingAccount(t)
	people, err := patterns.NewTable[Person](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := people.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	bags, err := patterns.NewTable[entity.Entity](acct, people.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := consistency.NewQueue(acct, testenv.QueueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	series, err := patterns.NewDataSeries[int64](acct, people.Name(), 24, nil)
	if err != nil {
		t.Fatal(err)
	}

	insert := func(p Person) func() error { return func() error { return people.Insert(ctx, &p, nil) } }
	wideBag := func(n int, each string) func() error {
		return func() error {
			e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{}}
			for i := 0; i < n; i++ {
				e.Properties["P"+strings.Repeat("x", i%5)+string(rune('A'+i%26))+itoa(i)] = entity.String(each)
			}
			return bags.Insert(ctx, &e, nil)
		}
	}
	cases := []struct {
		name string
		call func() error
		want error
	}{
		// Keys: each forbidden character, in both keys, and the size limit.
		{"PartitionKey with /", insert(Person{PartitionKey: "a/b", RowKey: "1"}), tablekit.ErrInvalidKey},
		{"PartitionKey with \\", insert(Person{PartitionKey: `a\b`, RowKey: "1"}), tablekit.ErrInvalidKey},
		{"RowKey with #", insert(Person{PartitionKey: "p", RowKey: "a#b"}), tablekit.ErrInvalidKey},
		{"RowKey with ?", insert(Person{PartitionKey: "p", RowKey: "a?b"}), tablekit.ErrInvalidKey},
		{"RowKey with NUL", insert(Person{PartitionKey: "p", RowKey: "a\x00b"}), tablekit.ErrInvalidKey},
		{"RowKey with U+001F", insert(Person{PartitionKey: "p", RowKey: "a\x1fb"}), tablekit.ErrInvalidKey},
		{"RowKey with DEL", insert(Person{PartitionKey: "p", RowKey: "a\x7fb"}), tablekit.ErrInvalidKey},
		{"RowKey with U+009F", insert(Person{PartitionKey: "p", RowKey: "a\u009fb"}), tablekit.ErrInvalidKey},
		{"RowKey not UTF-8", insert(Person{PartitionKey: "p", RowKey: "a\xffb"}), tablekit.ErrInvalidKey},
		{"PartitionKey of 513 units", insert(Person{PartitionKey: strings.Repeat("k", 513), RowKey: "1"}), tablekit.ErrInvalidKey},
		{"RowKey of 257 non-BMP characters (514 units)", insert(Person{PartitionKey: "p", RowKey: strings.Repeat("𝄞", 257)}), tablekit.ErrInvalidKey},
		{"Get with a forbidden key", func() error { _, err := people.Get(ctx, "p", "a/b", nil); return err }, tablekit.ErrInvalidKey},
		{"DeleteIfExists with a forbidden key", func() error { _, err := people.DeleteIfExists(ctx, "a#b", "1", nil); return err }, tablekit.ErrInvalidKey},
		{"Update with a forbidden key", func() error {
			_, err := people.Update(ctx, "p", "a?b", func(*Person) error { return nil }, nil)
			return err
		}, tablekit.ErrInvalidKey},

		// Entities: property count, size, strings, binary, values.
		{"253 properties", wideBag(253, "v"), tablekit.ErrInvalidEntity},
		{"entity over 1 MiB", wideBag(20, strings.Repeat("x", 30000)), tablekit.ErrInvalidEntity},
		{"string of 32,769 UTF-16 units", insert(Person{PartitionKey: "p", RowKey: "1", Name: strings.Repeat("n", 32769)}), tablekit.ErrInvalidEntity},
		{"binary over 64 KiB", insert(Person{PartitionKey: "p", RowKey: "1", Photo: make([]byte, 64<<10+1)}), tablekit.ErrInvalidEntity},
		{"uint64 over Int64", insert(Person{PartitionKey: "p", RowKey: "1", Visits: math.MaxUint64}), tablekit.ErrInvalidEntity},
		{"DateTime before 1601", insert(Person{PartitionKey: "p", RowKey: "1", Born: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}), tablekit.ErrInvalidEntity},
		{"nil entity", func() error { return people.Insert(ctx, nil, nil) }, tablekit.ErrInvalidEntity},
		{"invalid property name", func() error {
			e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{"not valid": entity.String("x")}}
			return bags.Insert(ctx, &e, nil)
		}, tablekit.ErrInvalidEntity},
		{"property name of 256 characters", func() error {
			e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{strings.Repeat("a", 256): entity.String("x")}}
			return bags.Insert(ctx, &e, nil)
		}, tablekit.ErrInvalidEntity},
		{"reserved property name", func() error {
			e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{"Timestamp": entity.String("x")}}
			return bags.Insert(ctx, &e, nil)
		}, tablekit.ErrInvalidEntity},

		// Go types the codec cannot store, reported when the table is made.
		{"channel field", func() error {
			type bad struct {
				PartitionKey, RowKey string
				C                    chan int
			}
			_, err := patterns.NewTable[bad](acct, "badtypes", nil)
			return err
		}, tablekit.ErrInvalidEntity},
		{"complex field", func() error {
			type bad struct {
				PartitionKey, RowKey string
				Z                    complex128
			}
			_, err := patterns.NewTable[bad](acct, "badtypes", nil)
			return err
		}, tablekit.ErrInvalidEntity},
		{"map field without the json option", func() error {
			type bad struct {
				PartitionKey, RowKey string
				M                    map[string]int
			}
			_, err := patterns.NewTable[bad](acct, "badtypes", nil)
			return err
		}, tablekit.ErrInvalidEntity},
		{"non-struct type", func() error { _, err := patterns.NewTable[int](acct, "badtypes", nil); return err }, tablekit.ErrInvalidEntity},

		// Names.
		{"table name too short", func() error { _, err := patterns.NewTable[Person](acct, "ab", nil); return err }, tablekit.ErrInvalidName},
		{"table name with a hyphen", func() error { _, err := patterns.NewTable[Person](acct, "my-table", nil); return err }, tablekit.ErrInvalidName},
		{"table name starting with a digit", func() error { _, err := patterns.NewTable[Person](acct, "1table", nil); return err }, tablekit.ErrInvalidName},
		{"table name of 64 characters", func() error { _, err := patterns.NewTable[Person](acct, "t"+strings.Repeat("a", 63), nil); return err }, tablekit.ErrInvalidName},
		{"reserved table name", func() error { _, err := patterns.NewTable[Person](acct, "Tables", nil); return err }, tablekit.ErrInvalidName},
		{"queue name with capitals", func() error { _, err := consistency.NewQueue(acct, "Jobs", nil); return err }, tablekit.ErrInvalidName},
		{"queue name with a double hyphen", func() error { _, err := consistency.NewQueue(acct, "a--b", nil); return err }, tablekit.ErrInvalidName},

		// Continuation tokens.
		{"malformed token", func() error { _, err := people.Page(ctx, keys.PK().Eq("p"), "%%%not-base64", nil); return err }, tablekit.ErrInvalidToken},
		{"token of another format", func() error {
			_, err := people.Page(ctx, keys.PK().Eq("p"), "eyJmb28iOiJiYXIifQ", nil) // {"foo":"bar"}
			return err
		}, tablekit.ErrInvalidToken},
		{"huge token", func() error {
			_, err := people.Page(ctx, keys.PK().Eq("p"), strings.Repeat("A", 70000), nil)
			return err
		}, tablekit.ErrInvalidToken},

		// Filters and queries.
		{"filter on an invalid property name", func() error {
			_, err := patterns.Collect(people.Query(ctx, keys.And(keys.PK().Eq("p"), keys.Prop("Name) or (1 eq 1").Eq("x")), nil))
			return err
		}, tablekit.ErrInvalidFilter},
		{"filter with an unsupported value type", func() error {
			_, err := patterns.Collect(people.Query(ctx, keys.And(keys.PK().Eq("p"), keys.Prop("Name").Eq(struct{}{})), nil))
			return err
		}, tablekit.ErrInvalidFilter},
		{"filter with NaN", func() error {
			_, err := patterns.Collect(people.Query(ctx, keys.And(keys.PK().Eq("p"), keys.Prop("Score").Gt(math.NaN())), nil))
			return err
		}, tablekit.ErrInvalidFilter},
		{"raw filter with an unterminated string", func() error { _, err := keys.ParseFilter("PartitionKey eq 'p"); return err }, tablekit.ErrInvalidFilter},
		{"raw filter with injected text", func() error {
			_, err := keys.ParseFilter("PartitionKey eq 'p'; DROP TABLE x")
			return err
		}, tablekit.ErrInvalidFilter},
		{"filter on a property the type does not have", func() error {
			_, err := patterns.Collect(people.Query(ctx, keys.And(keys.PK().Eq("p"), keys.Prop("Nme").Eq("x")), nil))
			return err
		}, tablekit.ErrInvalidFilter},
		{"table scan without opt-in", func() error {
			_, err := patterns.Collect(people.Query(ctx, keys.Prop("Name").Eq("x"), nil))
			return err
		}, tablekit.ErrTableScan},
		{"page size over 1000", func() error {
			_, err := people.Page(ctx, keys.PK().Eq("p"), "", &patterns.QueryOptions{Top: 1001})
			return err
		}, tablekit.ErrInvalidArgument},

		// Transactions.
		{"transaction across partitions", func() error {
			_, err := people.Transaction().Insert(&Person{PartitionKey: "a", RowKey: "1"}).Insert(&Person{PartitionKey: "b", RowKey: "1"}).Submit(ctx, nil)
			return err
		}, tablekit.ErrInvalidTransaction},
		{"transaction of 101 operations", func() error {
			tx := people.Transaction()
			for i := 0; i < 101; i++ {
				tx.Insert(&Person{PartitionKey: "p", RowKey: itoa(i)})
			}
			_, err := tx.Submit(ctx, nil)
			return err
		}, tablekit.ErrInvalidTransaction},
		{"transaction touching one entity twice", func() error {
			_, err := people.Transaction().Insert(&Person{PartitionKey: "p", RowKey: "1"}).Delete(&Person{PartitionKey: "p", RowKey: "1"}, &patterns.WriteOptions{Unconditional: true}).Submit(ctx, nil)
			return err
		}, tablekit.ErrInvalidTransaction},
		{"transaction with one bad entity", func() error {
			_, err := people.Transaction().Insert(&Person{PartitionKey: "p", RowKey: "1"}).Insert(&Person{PartitionKey: "p", RowKey: "2", Name: strings.Repeat("n", 40000)}).Submit(ctx, nil)
			return err
		}, tablekit.ErrInvalidEntity},

		// Patterns.
		{"data series slot out of range", func() error {
			return series.Upsert(ctx, "p", "r", map[int]int64{24: 1}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge})
		}, tablekit.ErrInvalidArgument},
		{"data series over the property limit", func() error { _, err := patterns.NewDataSeries[int64](acct, "series", 253, nil); return err }, tablekit.ErrInvalidEntity},

		// Queue messages built by the client.
		{"transaction with no steps", func() error { return queue.Enqueue(ctx, consistency.NewTransaction(), nil) }, consistency.ErrMalformed},
		// An unknown step kind is not refused here: a user's worker may
		// handle it. The worker poisons it (consistency's
		// TestPermanentFailuresPoisonAtOnce).
		{"built-in step with invalid arguments", func() error {
			return queue.Enqueue(ctx, consistency.NewTransaction(consistency.MoveEntity(
				consistency.EntityRef{Table: "bad-name", PartitionKey: "p", RowKey: "r"}, consistency.EntityRef{Table: "Archive"})), nil)
		}, consistency.ErrInvalidArgs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counter.Reset()
			err := c.call()
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want an error wrapping %v", err, c.want)
			}
			if err.Error() == "" || strings.Count(err.Error(), ":") == 0 {
				t.Errorf("error %q does not say what went wrong where", err)
			}
			if n := strings.Count(err.Error(), "tablekit:"); n > 1 {
				t.Errorf("error %q says tablekit: %d times, want once", err, n)
			}
			if n := counter.Count(); n != 0 {
				t.Errorf("%d requests sent before the error:\n%s", n, counter.Requests())
			}
		})
	}
	all, err := patterns.Collect(bags.Query(ctx, keys.Prop("RowKey").Ne(""), &patterns.QueryOptions{AllowTableScan: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("%d entities were written by rejected calls", len(all))
	}
}

// A hostile value in a filter stays inside its literal: the query runs and
// matches only what it says.
func TestHostileFilterValuesStayLiterals(t *testing.T) {
	ctx := context.Background()
	people, err := patterns.NewTable[Person](testenv.Account(t), testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := people.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Person{{PartitionKey: "p", RowKey: "1", Name: "alice"}, {PartitionKey: "p", RowKey: "2", Name: "x' or Name ne 'y"}} {
		if err := people.Insert(ctx, &p, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"x' or Name ne 'y", "' or 1 eq 1 or '", "alice' or 'a' eq 'a", "\u0000'", "%27%20or%20true"} {
		got, err := patterns.Collect(people.Query(ctx, keys.And(keys.PK().Eq("p"), keys.Prop("Name").Eq(v)), nil))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		for _, p := range got {
			if p.Name != v {
				t.Errorf("filter Name eq %q matched %q: the value broke out of its literal", v, p.Name)
			}
		}
		if v == "x' or Name ne 'y" && len(got) != 1 {
			t.Errorf("the stored hostile value was not found by equality (%d rows)", len(got))
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// The service's refusals on the common paths say "tablekit:" once too.
func TestServiceErrorsSayTablekitOnce(t *testing.T) {
	ctx := context.Background()
	acct, _ := testenv.CountingAccount(t)
	people, err := patterns.NewTable[Person](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := people.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	p := Person{PartitionKey: "p", RowKey: "1"}
	if err := people.Insert(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	stale := p
	if err := people.Replace(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"insert of an existing entity", people.Insert(ctx, &Person{PartitionKey: "p", RowKey: "1"}, nil)},
		{"get of a missing entity", func() error { _, err := people.Get(ctx, "p", "2", nil); return err }()},
		{"replace with a stale ETag", people.Replace(ctx, &stale, nil)},
		{"a transaction that fails", func() error {
			_, err := people.Transaction().Insert(&Person{PartitionKey: "p", RowKey: "1"}).Submit(ctx, nil)
			return err
		}()},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		} else if n := strings.Count(c.err.Error(), "tablekit:"); n != 1 {
			t.Errorf("%s: %q says tablekit: %d times, want once", c.name, c.err, n)
		}
	}
}
