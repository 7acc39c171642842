package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestMain(m *testing.M) {
	if testenv.RunsAs("echo-args") {
		fmt.Println(strings.Join(os.Args[1:], " "))
		os.Exit(3)
	}
	if testenv.RunsAs("main-connection-string") {
		fmt.Print(testenv.MainConnectionString())
		os.Exit(0)
	}
	testenv.Main(m)
}

// Self's link runs this test binary as the command its TestMain makes of
// it, with the arguments and exit status of that command; through a link
// its TestMain does not know, the binary says so and runs no test (else
// each test starting it would start it again, and so on).
func TestSelfRunsTheBinaryAsACommand(t *testing.T) {
	out, err := exec.Command(testenv.Self(t, "echo-args"), "a", "b c").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || string(out) != "a b c\n" {
		t.Errorf("echo-args: %q, %v; want \"a b c\\n\" and exit status 3", out, err)
	}
	out, err = exec.Command(testenv.Self(t, "unknown"), "-test.run", ".").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "its TestMain did not run the command") {
		t.Errorf("a link TestMain does not know: %q, %v; want exit status 2 and why", out, err)
	}
}

// On the azurite targets, an Azurite named by EnvAzurite (tools/withazurite
// started it) is the one the tests use: none is started.
func TestAzuriteTargetUsesTheNamedAzurite(t *testing.T) {
	const cs = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:9/devstoreaccount1"
	for _, target := range []string{testenv.TargetAzurite, testenv.TargetAzuriteLenient} {
		cmd := exec.Command(testenv.Self(t, "main-connection-string"))
		cmd.Env = append(os.Environ(), testenv.EnvTarget+"="+target, testenv.EnvAzurite+"="+cs,
			"TABLEKIT_AZURITE=/nonexistent/azurite") // starting one would fail
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != cs {
			t.Errorf("%s: the main connection string is %q (%v), want %s's", target, out, err, testenv.EnvAzurite)
		}
	}
}

func TestNamesAreUniqueAndValid(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		tn, qn, cn := testenv.TableName(t), testenv.QueueName(t), testenv.ContainerName(t)
		if err := keys.ValidateTableName(tn); err != nil {
			t.Fatal(err)
		}
		if err := keys.ValidateQueueName(qn); err != nil {
			t.Fatal(err)
		}
		if err := keys.ValidateContainerName(cn); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{tn, qn, cn} {
			if seen[n] {
				t.Fatalf("name %q handed out twice", n)
			}
			seen[n] = true
		}
	}
}

func TestTableIsDeletedAtCleanup(t *testing.T) {
	acct := testenv.Account(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		name = testenv.TableName(t)
		c := acct.Tables().NewClient(name)
		if _, err := c.CreateTable(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddEntity(context.Background(), []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
			t.Fatal(err)
		}
	})
	_, err := acct.Tables().NewClient(name).GetEntity(context.Background(), "p", "r", nil)
	if !errors.Is(tablekit.MapError(err, "", ""), tablekit.ErrNotFound) {
		t.Fatalf("table %s still readable after its test ended: %v", name, err)
	}
}

func TestCountingAccountCountsEveryRequest(t *testing.T) {
	acct, counter := testenv.CountingAccount(t)
	c := testenv.Table(t, acct)
	counter.Reset()
	ctx := context.Background()
	if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	if n := counter.Count(); n != 2 {
		t.Fatalf("counted %d requests for an insert and a get, want 2:\n%s", n, counter.Requests())
	}
}

// On TargetEarlyEnd, the emulators testenv starts end pages
// early (OtherAccount's here), except for CountingAccount's queries: a
// query's requests stay countable.
func TestEarlyEndEnv(t *testing.T) {
	t.Setenv(testenv.EnvTarget, testenv.TargetEarlyEnd)
	t.Setenv(testenv.EnvSeed, "3")
	if !testenv.EarlyEnd() || !testenv.IsEmulator() {
		t.Fatalf("%s=%s: EarlyEnd() = %v on %s, want true on the emulator", testenv.EnvTarget, testenv.TargetEarlyEnd, testenv.EarlyEnd(), testenv.Target())
	}
	other := testenv.OtherAccount(t)
	acct, err := tablekit.Connect(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := testenv.TableName(t)
	tbl := acct.Tables().NewClient(name)
	if _, err := tbl.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := tbl.AddEntity(ctx, []byte(fmt.Sprintf(`{"PartitionKey":"p","RowKey":"r%02d"}`, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	// pages reads the table in pages of 10 and returns the requests taken.
	pages := func(acct *tablekit.Account, c *tablekit.RequestCounter) int64 {
		t.Helper()
		c.Reset()
		top := int32(10)
		pager := acct.Tables().NewClient(name).NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: &top})
		n := 0
		for pager.More() {
			p, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Entities)
		}
		if n != 40 {
			t.Fatalf("the pages held %d entities, want 40", n)
		}
		return c.Count()
	}
	c := &tablekit.RequestCounter{}
	plain, err := tablekit.Connect(other, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{c}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := pages(plain, c); n <= 4 {
		t.Errorf("40 entities in pages of 10 took %d requests on OtherAccount: no page ended early", n)
	}
	if n := pages(testenv.CountingAccountOn(t, other)); n != 4 {
		t.Errorf("40 entities in pages of 10 took %d requests through CountingAccountOn, want 4", n)
	}
}

// Main sets the garbage collector's target to TestGCPercent when GOGC is
// unset and no benchmark runs, and keeps a GOGC the caller set.
func TestMainSetsTheGCPercent(t *testing.T) {
	want := testenv.TestGCPercent
	switch g := os.Getenv("GOGC"); g {
	case "":
	case "off":
		want = -1
	default:
		n, err := strconv.Atoi(g)
		if err != nil {
			t.Fatalf("GOGC=%s: %v", g, err)
		}
		want = n
	}
	got := debug.SetGCPercent(want)
	if got != want {
		t.Errorf("the GC percent under Main is %d, want %d", got, want)
	}
}

// MainConnectionString's service, the Examples', runs its clock
// ExampleClockRate times as fast as real time on the emulator targets: a
// message enqueued with a one-second delay is received within half a
// second. Elsewhere it keeps real time, and the message is not received
// that soon.
func TestMainConnectionStringRunsTheClockFaster(t *testing.T) {
	ctx := context.Background()
	svc, err := azqueue.NewServiceClientFromConnectionString(testenv.MainConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	q := svc.NewQueueClient(testenv.QueueName(t))
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Delete(context.Background(), nil) })
	start := time.Now()
	if _, err := q.EnqueueMessage(ctx, "later", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr[int32](1)}); err != nil {
		t.Fatal(err)
	}
	fast := testenv.Target() == testenv.TargetEmulator
	for time.Since(start) < 500*time.Millisecond {
		r, err := q.DequeueMessages(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) > 0 {
			if !fast {
				t.Fatalf("on %s a message enqueued with a 1 s delay was received after %v", testenv.Target(), time.Since(start))
			}
			t.Logf("received after %v", time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fast {
		t.Fatalf("a message enqueued with a 1 s delay on the Examples' emulator, its clock %d times as fast as real time, was not received within 0.5 s", testenv.ExampleClockRate)
	}
}
