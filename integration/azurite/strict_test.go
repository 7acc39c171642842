package azurite_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/tier"
)

// One plain and one strict Azurite serve every rule test of this binary.
var harness struct {
	once          sync.Once
	plain, strict *azurite.Instance
	err           error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if harness.plain != nil {
		harness.plain.Stop()
	}
	if harness.strict != nil {
		harness.strict.Stop()
	}
	os.Exit(code)
}

func harnesses(t testing.TB) (plain, strict *azurite.Instance) {
	t.Helper()
	tier.Require(t, tier.Azurite)
	harness.once.Do(func() {
		ctx := context.Background()
		if harness.plain, harness.err = azurite.Start(ctx, nil); harness.err != nil {
			return
		}
		harness.strict, harness.err = azurite.Start(ctx, &azurite.Options{Strict: true})
	})
	if harness.err != nil {
		t.Fatalf("azurite: %v", harness.err)
	}
	return harness.plain, harness.strict
}

// azureAnswer is how the service refused a request: the status (the inner
// one for a transaction), the error code and, for a transaction, the
// index of the failing operation (-1 otherwise).
type azureAnswer struct {
	Status int
	Code   string
	Index  int
}

var innerStatus = regexp.MustCompile(`HTTP/1\.1 (\d{3}) `)

// answerOf reads the service's refusal out of an aztables error, as a
// caller of the raw SDK would.
func answerOf(t *testing.T, err error) azureAnswer {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want a service error, got %v", err)
	}
	if re.StatusCode != http.StatusAccepted {
		return azureAnswer{Status: re.StatusCode, Code: re.ErrorCode, Index: -1}
	}
	body, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		t.Fatal(perr)
	}
	m := innerStatus.FindSubmatch(body)
	i := strings.IndexByte(string(body), '{')
	if m == nil || i < 0 {
		t.Fatalf("202 without an inner error: %q", body)
	}
	var e struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.NewDecoder(strings.NewReader(string(body[i:]))).Decode(&e); err != nil {
		t.Fatalf("inner error is not an OData error: %v: %q", err, body)
	}
	status, _ := strconv.Atoi(string(m[1]))
	idx, _, ok := strings.Cut(e.OData.Message.Value, ":")
	n, nerr := strconv.Atoi(idx)
	if !ok || nerr != nil {
		t.Fatalf("inner message %q does not start with the operation's index", e.OData.Message.Value)
	}
	return azureAnswer{Status: status, Code: e.OData.Code, Index: n}
}

// newTable creates a table with a unique name on inst and returns its raw
// SDK client.
func newTable(t testing.TB, inst *azurite.Instance) *aztables.Client {
	t.Helper()
	c, _ := newNamedTable(t, inst)
	return c
}

func newNamedTable(t testing.TB, inst *azurite.Instance) (*aztables.Client, string) {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(inst.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := "strict" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	c := svc.NewClient(name)
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = c.Delete(context.Background(), nil) })
	return c, name
}

func entityJSON(t testing.TB, e map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func insertActions(t testing.TB, keys ...[2]string) []aztables.TransactionAction {
	var acts []aztables.TransactionAction
	for _, k := range keys {
		acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
			Entity: entityJSON(t, map[string]any{"PartitionKey": k[0], "RowKey": k[1], "V": 1})})
	}
	return acts
}

func wideEntity(t *testing.T, props int) []byte {
	e := map[string]any{"PartitionKey": "p", "RowKey": "wide"}
	for i := 0; i < props; i++ {
		e["P"+strconv.Itoa(i)] = i
	}
	return entityJSON(t, e)
}

// bigEntity is about 1.25 MiB by Azure's size formula: 20 Binary
// properties of 64 KiB, each within Azurite's per-property limit.
func bigEntity(t *testing.T) []byte {
	e := map[string]any{"PartitionKey": "p", "RowKey": "big"}
	blob := base64.StdEncoding.EncodeToString(make([]byte, 64<<10))
	for i := 0; i < 20; i++ {
		e["B"+strconv.Itoa(i)] = blob
		e["B"+strconv.Itoa(i)+"@odata.type"] = "Edm.Binary"
	}
	return entityJSON(t, e)
}

type plainDoes int

const (
	accepts          plainDoes = iota // Azurite accepts what Azure refuses
	refusesOtherwise                  // Azurite refuses, not with Azure's answer
	answersAsAzure                    // Azurite already answers as Azure does
)

// TestStrictRules runs each rule with the raw aztables client on the plain
// harness, which accepts (or answers otherwise than Azure), and on the
// strict one, which answers as Azure does.
func TestStrictRules(t *testing.T) {
	ctx := context.Background()
	many := make([][2]string, 101)
	for i := range many {
		many[i] = [2]string{"p", fmt.Sprintf("r%03d", i)}
	}
	rules := []struct {
		name string
		do   func(t *testing.T, c *aztables.Client) error
		want azureAnswer
		// plain is what Azurite does, measured with Azurite 3.37.0.
		plain plainDoes
	}{
		{"batch spanning partitions", func(t *testing.T, c *aztables.Client) error {
			_, err := c.SubmitTransaction(ctx, insertActions(t, [2]string{"p1", "a"}, [2]string{"p1", "b"}, [2]string{"p2", "c"}), nil)
			return err
		}, azureAnswer{400, "CommandsInBatchActOnDifferentPartitions", 2}, accepts},
		{"two operations on one entity", func(t *testing.T, c *aztables.Client) error {
			acts := insertActions(t, [2]string{"p", "a"}, [2]string{"p", "b"})
			acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeUpdateMerge,
				Entity: entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "a", "W": 2})})
			_, err := c.SubmitTransaction(ctx, acts, nil)
			return err
		}, azureAnswer{400, "InvalidDuplicateRow", 2}, answersAsAzure},
		{"more than 100 operations", func(t *testing.T, c *aztables.Client) error {
			_, err := c.SubmitTransaction(ctx, insertActions(t, many...), nil)
			return err
		}, azureAnswer{400, "InvalidInput", 99}, refusesOtherwise},
		{"253 custom properties", func(t *testing.T, c *aztables.Client) error {
			_, err := c.AddEntity(ctx, wideEntity(t, 253), nil)
			return err
		}, azureAnswer{400, "TooManyProperties", -1}, accepts},
		{"253 custom properties in a batch", func(t *testing.T, c *aztables.Client) error {
			acts := insertActions(t, [2]string{"p", "a"})
			acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: wideEntity(t, 253)})
			_, err := c.SubmitTransaction(ctx, acts, nil)
			return err
		}, azureAnswer{400, "TooManyProperties", 1}, accepts},
		{"an entity over 1 MiB", func(t *testing.T, c *aztables.Client) error {
			_, err := c.AddEntity(ctx, bigEntity(t), nil)
			return err
		}, azureAnswer{400, "EntityTooLarge", -1}, accepts},
		{"a property name that is not an identifier", func(t *testing.T, c *aztables.Client) error {
			_, err := c.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "not-an-identifier": 1}), nil)
			return err
		}, azureAnswer{400, "PropertyNameInvalid", -1}, accepts},
		{"a property name starting with a digit, on upsert", func(t *testing.T, c *aztables.Client) error {
			_, err := c.UpsertEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "1st": 1}), nil)
			return err
		}, azureAnswer{400, "PropertyNameInvalid", -1}, accepts},
		{"a property name of 256 characters", func(t *testing.T, c *aztables.Client) error {
			_, err := c.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "N" + strings.Repeat("x", 255): 1}), nil)
			return err
		}, azureAnswer{400, "PropertyNameTooLong", -1}, accepts},
		{"a RowKey with a slash", func(t *testing.T, c *aztables.Client) error {
			_, err := c.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "a/b"}), nil)
			return err
		}, azureAnswer{400, "InvalidInput", -1}, answersAsAzure},
		{"a String over 32K UTF-16 units", func(t *testing.T, c *aztables.Client) error {
			_, err := c.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "S": strings.Repeat("x", 32*1024+1)}), nil)
			return err
		}, azureAnswer{400, "PropertyValueTooLarge", -1}, answersAsAzure},
		{"$top above 1000", func(t *testing.T, c *aztables.Client) error {
			top := int32(1001)
			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: &top})
			_, err := pager.NextPage(ctx)
			return err
		}, azureAnswer{400, "InvalidInput", -1}, accepts},
		{"an unterminated string literal", func(t *testing.T, c *aztables.Client) error {
			filter := "PartitionKey eq 'p"
			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
			_, err := pager.NextPage(ctx)
			return err
		}, azureAnswer{400, "InvalidInput", -1}, accepts},
		{"a malformed literal", func(t *testing.T, c *aztables.Client) error {
			filter := "N eq 5LL"
			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
			_, err := pager.NextPage(ctx)
			return err
		}, azureAnswer{400, "InvalidInput", -1}, accepts},
		{"two properties compared", func(t *testing.T, c *aztables.Client) error {
			filter := "PartitionKey eq RowKey"
			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
			_, err := pager.NextPage(ctx)
			return err
		}, azureAnswer{501, "NotImplemented", -1}, accepts},
	}
	plain, strict := harnesses(t)
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			err := rule.do(t, newTable(t, plain))
			switch rule.plain {
			case accepts:
				if err != nil {
					t.Errorf("plain Azurite refused it (it used to accept): %v", err)
				}
			case refusesOtherwise:
				var re *azcore.ResponseError
				if err == nil || errors.As(err, &re) && re.StatusCode == http.StatusAccepted {
					t.Errorf("plain Azurite no longer refuses it unlike Azure (update the rule): %v", err)
				}
			case answersAsAzure:
				if err == nil {
					t.Fatal("plain Azurite accepted it (it used to refuse it as Azure does)")
				}
				if got := answerOf(t, err); got != rule.want {
					t.Errorf("plain answer = %+v, want Azure's %+v", got, rule.want)
				}
			}
			err = rule.do(t, newTable(t, strict))
			if err == nil {
				t.Fatal("strict harness accepted it")
			}
			if got := answerOf(t, err); got != rule.want {
				t.Errorf("strict answer = %+v, want Azure's %+v (%v)", got, rule.want, err)
			}
		})
	}
}

// TestStrictPassesTheLimitsThemselves: what Azure accepts, the strict
// harness accepts too, right at each limit.
func TestStrictPassesTheLimitsThemselves(t *testing.T) {
	ctx := context.Background()
	_, strict := harnesses(t)
	c := newTable(t, strict)
	hundred := make([][2]string, 100)
	for i := range hundred {
		hundred[i] = [2]string{"p", fmt.Sprintf("r%03d", i)}
	}
	if _, err := c.SubmitTransaction(ctx, insertActions(t, hundred...), nil); err != nil {
		t.Errorf("100 operations on one partition: %v", err)
	}
	if _, err := c.AddEntity(ctx, wideEntity(t, 252), nil); err != nil {
		t.Errorf("252 custom properties: %v", err)
	}
	e := map[string]any{"PartitionKey": "p", "RowKey": "names", "_u": 1, "Ünïcode": 2, "N" + strings.Repeat("x", 254): 3, "odata.type": "x.y"}
	if _, err := c.AddEntity(ctx, entityJSON(t, e), nil); err != nil {
		t.Errorf("identifiers of 2 to 255 characters: %v", err)
	}
	top, filter := int32(1000), "RowKey eq 'it''s'"
	if _, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: &top, Filter: &filter}).NextPage(ctx); err != nil {
		t.Errorf("$top=1000 and an escaped quote in a literal: %v", err)
	}
	got, err := c.GetEntity(ctx, "p", "r099", nil)
	if err != nil || !strings.Contains(string(got.Value), `"r099"`) {
		t.Errorf("point read through the proxy: %v %s", err, got.Value)
	}
}

// tableSAS signs a table SAS for the key range [spk, epk] (Azurite's
// development key; the layout of "Create a service SAS", version
// 2019-02-02). aztables signs ranges without sending them (docs/SAS.md),
// so the test signs its own.
func tableSAS(t *testing.T, table, spk, epk string) string {
	t.Helper()
	se := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05Z")
	toSign := strings.Join([]string{"raud", "", se, "/table/" + azurite.AccountName + "/" + strings.ToLower(table),
		"", "", "", "2019-02-02", spk, "", epk, ""}, "\n")
	key, _ := base64.StdEncoding.DecodeString(azurite.AccountKey)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(toSign))
	q := url.Values{"sv": {"2019-02-02"}, "tn": {table}, "sp": {"raud"}, "se": {se}, "spk": {spk}, "epk": {epk},
		"sig": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}}
	return q.Encode()
}

// TestStrictSASKeyRange: Azure refuses an entity outside a SAS's key range
// with 403 AuthorizationFailure and answers a query with the range only;
// Azurite ignores the range.
func TestStrictSASKeyRange(t *testing.T) {
	ctx := context.Background()
	plain, strict := harnesses(t)
	for _, h := range []struct {
		name   string
		inst   *azurite.Instance
		strict bool
	}{{"plain", plain, false}, {"strict", strict, true}} {
		t.Run(h.name, func(t *testing.T) {
			owner, table := newNamedTable(t, h.inst)
			for _, pk := range []string{"alice", "bob"} {
				for _, rk := range []string{"1", "2"} {
					if _, err := owner.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": pk, "RowKey": rk}), nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			sasURL := h.inst.TableURL + "/" + table + "?" + tableSAS(t, table, "alice", "alice")
			alice, err := aztables.NewClientWithNoCredential(sasURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := alice.GetEntity(ctx, "alice", "1", nil); err != nil {
				t.Fatalf("alice reads her own entity: %v", err)
			}
			if _, err := alice.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "alice", "RowKey": "3"}), nil); err != nil {
				t.Fatalf("alice writes in her range: %v", err)
			}
			outside := map[string]func() error{
				"read": func() error { _, err := alice.GetEntity(ctx, "bob", "1", nil); return err },
				"insert": func() error {
					_, err := alice.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "bob", "RowKey": "3"}), nil)
					return err
				},
				"upsert": func() error {
					_, err := alice.UpsertEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "bob", "RowKey": "1"}), nil)
					return err
				},
				"delete": func() error { _, err := alice.DeleteEntity(ctx, "bob", "2", nil); return err },
			}
			for verb, do := range outside {
				err := do()
				if !h.strict {
					if err != nil {
						t.Errorf("plain Azurite refused alice's %s of bob's entity (it used to answer): %v", verb, err)
					}
					continue
				}
				if err == nil {
					t.Errorf("strict harness let alice %s bob's entity", verb)
					continue
				}
				if got, want := answerOf(t, err), (azureAnswer{403, "AuthorizationFailure", -1}); got != want {
					t.Errorf("%s outside the range: %+v, want %+v", verb, got, want)
				}
			}
			var pks []string
			filter := "RowKey ge '1'"
			pager := alice.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatalf("alice's query: %v", err)
				}
				for _, e := range page.Entities {
					var v struct{ PartitionKey string }
					_ = json.Unmarshal(e, &v)
					pks = append(pks, v.PartitionKey)
				}
			}
			onlyAlice := !strings.Contains(strings.Join(pks, ","), "bob")
			if h.strict && (!onlyAlice || len(pks) < 2) {
				t.Errorf("strict: alice's query returned partitions %v, want alice's only", pks)
			}
			if !h.strict && onlyAlice {
				t.Errorf("plain Azurite now narrows the query to the range (%v): update the notes", pks)
			}
		})
	}
}

// BenchmarkStrictOverhead measures what the proxy adds: a point read and a
// 100-operation transaction, on the plain and the strict harness side by
// side (compare the two medians of -count 6).
func BenchmarkStrictOverhead(b *testing.B) {
	ctx := context.Background()
	plain, strict := harnesses(b)
	for _, h := range []struct {
		name string
		inst *azurite.Instance
	}{{"plain", plain}, {"strict", strict}} {
		c := newTable(b, h.inst)
		if _, err := c.AddEntity(ctx, entityJSON(b, map[string]any{"PartitionKey": "p", "RowKey": "r", "V": 1}), nil); err != nil {
			b.Fatal(err)
		}
		b.Run("get/"+h.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := c.GetEntity(ctx, "p", "r", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("batch100/"+h.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				keys := make([][2]string, 100)
				for j := range keys {
					keys[j] = [2]string{"b" + strconv.Itoa(i), strconv.Itoa(j)}
				}
				acts := insertActions(b, keys...)
				for j := range acts {
					acts[j].ActionType = aztables.TransactionTypeInsertReplace // b.N restarts at 0
				}
				if _, err := c.SubmitTransaction(ctx, acts, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
