// Command expenses is the design guide's "Log tail pattern": the ten most
// recent expense claims of an employee with one request. Claims are
// appended under RowKeys of inverted ticks (the guide's C#
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks)),
// so a partition lists its newest claim first and "$top=10" returns the
// ten most recent (patterns.LogTail).
//
// The claims carry fixed dates so the output is the same on every run.
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
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// ExpenseClaim is one claim; PartitionKey is the employee id, RowKey is
// set by LogTail.Append.
type ExpenseClaim struct {
	PartitionKey string
	RowKey       string
	Submitted    time.Time
	Description  string
	Amount       float64
}

func main() {
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "expenses"); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

func run(ctx context.Context, connStr, tableName string) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	// A fixed-width sequence after the inverted ticks keeps claims of the
	// same 100 ns tick apart (the default is 16 random hex digits).
	var seq atomic.Int64
	claims, err := patterns.NewLogTail[ExpenseClaim](acct, tableName, &patterns.LogTailOptions{
		Suffix: func() string { return keys.PadInt(seq.Add(1), 4) },
	})
	if err != nil {
		return err
	}
	if err := claims.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, claims.Table().Drop(ctx, nil)) }()
	requests.Take()

	const emp = "000123"
	items := []string{"taxi", "hotel", "lunch", "train", "dinner", "parking", "flight", "books", "coffee", "museum", "taxi", "conference", "hotel", "lunch", "taxi"}
	first := time.Date(2024, 3, 1, 9, 30, 0, 0, time.UTC)
	var firstKey string
	for i, what := range items {
		at := first.AddDate(0, 0, i)
		c := ExpenseClaim{PartitionKey: emp, Submitted: at, Description: what, Amount: float64(10 + 7*i)}
		rk, err := claims.Append(ctx, &c, at, nil)
		if err != nil {
			return err
		}
		if i == 0 {
			firstKey = rk
		}
	}
	fmt.Printf("appended %d claims of employee %s, one a day from %s: %s\n", len(items), emp, first.Format("2006-01-02"), plural(requests.Take()))
	t, err := patterns.LogTailTime(firstKey)
	if err != nil {
		return err
	}
	fmt.Printf("the first claim's RowKey %s reads back as %s\n", firstKey, t.Format(time.RFC3339))

	latest, err := claims.Latest(ctx, emp, 10, nil)
	if err != nil {
		return err
	}
	fmt.Printf("the ten most recent ($top=10), newest first: %s\n", plural(requests.Take()))
	for _, c := range latest {
		fmt.Printf("  %s  %-10s %6.2f\n", c.Submitted.Format("2006-01-02"), c.Description, c.Amount)
	}

	from, to := time.Date(2024, 3, 3, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC)
	fmt.Printf("claims from %s to %s (a range query on the RowKeys):", from.Format("2006-01-02"), to.Format("2006-01-02"))
	var total float64
	for c, err := range claims.Range(ctx, emp, from, to, nil) {
		if err != nil {
			return err
		}
		fmt.Printf(" %s %.2f;", c.Description, c.Amount)
		total += c.Amount
	}
	fmt.Printf(" total %.2f: %s\n", total, plural(requests.Take()))
	return nil
}
