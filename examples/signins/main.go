// Command signins is the design guide's "High volume delete pattern":
// sign-in attempts are kept in a separate table for each day
// (patterns.PeriodTables), so deleting the days older than 60 is one
// request per day, whatever the number of sign-ins, instead of a table
// scan and a delete per entity. Within a day's table each user has a
// partition of their own, so inserts do not heat one partition.
//
// The program runs on a fixed clock (its "today" is 2024-05-01) so that
// its output is the same on every run. Table names are never reused after
// a delete (the guide: "It's better to always use unique table names"):
// against a real account, wait a minute before running it again, while
// the service finishes deleting the previous run's tables.
//
// The program connects to AZURE_STORAGE_CONNECTION_STRING, or to
// Azurite's development storage when the variable is unset, so it runs on
// Azure unchanged.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// SignIn is one sign-in attempt: PartitionKey is the user, RowKey the
// attempt's time (keys.TimeKey, oldest first).
type SignIn struct {
	PartitionKey string
	RowKey       string
	At           time.Time
	Succeeded    bool
	Address      string
}

// today is the program's fixed clock.
var today = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

func main() {
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "signins"); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// run writes 64 days of sign-ins into tables named prefix+"YYYYMMDD",
// drops the days older than 60 and reads the last two days.
func run(ctx context.Context, connStr, prefix string) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	days, err := patterns.NewPeriodTables[SignIn](acct, prefix, &patterns.PeriodTablesOptions{Period: keys.Day})
	if err != nil {
		return err
	}
	// Clean up every table of the series, even after a failure.
	defer func() {
		if _, derr := days.DropBefore(ctx, today.AddDate(0, 0, 1), nil); derr != nil {
			err = errors.Join(err, derr)
		}
	}()

	const span = 64
	users := []string{"jcao", "dhall", "jjones"}
	written := 0
	for d := span - 1; d >= 0; d-- {
		day := today.AddDate(0, 0, -d)
		for i, u := range users[:1+d%len(users)] {
			at := day.Add(time.Duration(8+i) * time.Hour).Add(time.Duration(d) * time.Minute)
			s := SignIn{PartitionKey: u, RowKey: keys.TimeKey(at), At: at, Succeeded: (d+i)%5 != 0, Address: "10.0.0." + strconv.Itoa(1+i)}
			if err := days.Insert(ctx, at, &s, nil); err != nil {
				return err
			}
			written++
		}
	}
	fmt.Printf("wrote   %d sign-ins over %d days, %s to %s: %s (the first write of a day also creates its table: 2 more)\n",
		written, span, today.AddDate(0, 0, -(span-1)).Format("2006-01-02"), today.Format("2006-01-02"), plural(requests.Take()))

	cutoff := today.AddDate(0, 0, -60)
	dropped, err := days.DropBefore(ctx, cutoff, nil)
	if err != nil {
		return err
	}
	fmt.Printf("drop    days older than 60 (before %s): %d tables, %s (list, then one delete per table)\n", cutoff.Format("2006-01-02"), len(dropped), plural(requests.Take()))
	for _, t := range dropped {
		fmt.Printf("        %s\n", t)
	}

	left, err := days.List(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Printf("list    %d tables left, %s to %s: %s\n", len(left), left[0], left[len(left)-1], plural(requests.Take()))

	if err := days.Insert(ctx, cutoff.Add(-time.Hour), &SignIn{PartitionKey: "jcao", RowKey: keys.TimeKey(cutoff.Add(-time.Hour)), At: cutoff.Add(-time.Hour)}, nil); !errors.Is(err, patterns.ErrPeriodDropped) {
		return fmt.Errorf("a write into a dropped day: got %v, want ErrPeriodDropped", err)
	}
	fmt.Printf("insert  into a dropped day -> refused (its name is never reused): %s\n", plural(requests.Take()))

	from := today.AddDate(0, 0, -1)
	fmt.Printf("query   jcao's sign-ins since %s (one partition in each day's table):\n", from.Format("2006-01-02"))
	for s, err := range days.Query(ctx, from, today.AddDate(0, 0, 1), keys.PK().Eq("jcao"), nil) {
		if err != nil {
			return err
		}
		fmt.Printf("        %s from %s, succeeded %v\n", s.At.Format("2006-01-02 15:04"), s.Address, s.Succeeded)
	}
	fmt.Printf("        cost: %s\n", plural(requests.Take()))
	return nil
}
