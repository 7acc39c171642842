package patterns_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// The guide's log tail pattern: an employee's expense claims under
// inverted-ticks RowKeys, so that the partition lists the newest first and
// the most recent claims are one query with $top.
func ExampleLogTail() {
	type ExpenseClaim struct {
		PartitionKey string // the employee
		RowKey       string // set by Append: inverted ticks and a suffix
		ETag         string
		Amount       float64
		Description  string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	claims, err := patterns.NewLogTail[ExpenseClaim](acct, "exexpenses", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := claims.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	july := time.Date(2014, 7, 1, 9, 0, 0, 0, time.UTC)
	for day, what := range []string{"taxi", "hotel", "lunch", "train", "dinner"} {
		c := ExpenseClaim{PartitionKey: "empid_000123", Amount: float64(10 * (day + 1)), Description: what}
		// A program appends with time.Now(); fixed times keep the output stable.
		if _, err := claims.Append(ctx, &c, july.AddDate(0, 0, day), nil); err != nil {
			log.Fatal(err)
		}
	}

	latest, err := claims.Latest(ctx, "empid_000123", 3, nil) // one request
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range latest {
		at, err := patterns.LogTailTime(c.RowKey)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("latest:", at.Format(time.DateOnly), c.Description, c.Amount)
	}
	// [from, to): July 2 included, July 4 not.
	for c, err := range claims.Range(ctx, "empid_000123", july.AddDate(0, 0, 1), july.AddDate(0, 0, 3), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("July 2-3:", c.Description)
	}
	// Output:
	// latest: 2014-07-05 dinner 50
	// latest: 2014-07-04 train 40
	// latest: 2014-07-03 lunch 30
	// July 2-3: lunch
	// July 2-3: hotel
}

// The guide's high volume delete pattern: a table per day of sign-in
// attempts, so that deleting a day is deleting its table, one request
// whatever its size.
func ExamplePeriodTables() {
	type SignIn struct {
		PartitionKey string // the user
		RowKey       string // the time of the attempt
		Succeeded    bool
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	signins, err := patterns.NewPeriodTables[SignIn](acct, "exsignins", &patterns.PeriodTablesOptions{Period: keys.Day})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Date(2014, 8, 20, 8, 0, 0, 0, time.UTC)
	for day := range 3 {
		for _, user := range []string{"jun", "jane"} {
			at := start.AddDate(0, 0, day)
			s := SignIn{PartitionKey: user, RowKey: keys.TimeKey(at), Succeeded: user == "jun" || day > 0}
			if err := signins.Insert(ctx, at, &s, nil); err != nil { // creates the day's table
				log.Fatal(err)
			}
		}
	}
	tables, err := signins.List(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tables:", tables)

	failed := keys.And(keys.PK().Eq("jane"), keys.Prop("Succeeded").Eq(false))
	for s, err := range signins.Query(ctx, start, start.AddDate(0, 0, 3), failed, nil) {
		if err != nil {
			log.Fatal(err)
		}
		at, err := keys.ParseTimeKey(s.RowKey)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("jane failed on", at.Format(time.DateOnly))
	}

	// Keep the last day: delete the two before it, one request each.
	dropped, err := signins.DropBefore(ctx, start.AddDate(0, 0, 2), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dropped:", dropped)
	// Output:
	// tables: [exsignins20140820 exsignins20140821 exsignins20140822]
	// jane failed on 2014-08-20
	// dropped: [exsignins20140820 exsignins20140821]
}

// The guide's answer to the prepend/append anti-pattern: access events of
// the Sales department, keyed by time, spread over several partitions
// instead of heating the current one, and read back merged in time order.
func ExampleBucketed() {
	type AccessEvent struct {
		PartitionKey string // set by Insert: the stream and a bucket
		RowKey       string // time and event id
		Resource     string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	events, err := patterns.NewBucketed[AccessEvent](acct, "exaccess", 7, nil) // 7 partitions per stream
	if err != nil {
		log.Fatal(err)
	}
	if err := events.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	at := time.Date(2014, 8, 22, 18, 0, 0, 0, time.UTC)
	for i, resource := range []string{"wiki", "mail", "crm", "wiki", "build"} {
		e := AccessEvent{RowKey: keys.Join(keys.TimeKey(at.Add(time.Duration(i)*time.Minute)), keys.PadInt(int64(i), 4)), Resource: resource}
		if err := events.Insert(ctx, "Sales", &e, nil); err != nil {
			log.Fatal(err)
		}
	}
	// Every bucket is read (the first pages at once), then merged.
	for e, err := range events.Query(ctx, "Sales", keys.Filter{}, nil) {
		if err != nil {
			log.Fatal(err)
		}
		parts, err := keys.Split(e.RowKey)
		if err != nil {
			log.Fatal(err)
		}
		t, err := keys.ParseTimeKey(parts[0])
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.Format(time.TimeOnly), e.Resource, "from", e.PartitionKey)
	}
	// Output:
	// 18:00:00 wiki from Sales_6
	// 18:01:00 mail from Sales_4
	// 18:02:00 crm from Sales_4
	// 18:03:00 wiki from Sales_1
	// 18:04:00 build from Sales_0
}

// The guide's answer to the log data anti-pattern, done as Storage
// Analytics does it: records buffered, then written in batches to blobs
// named by hour ("queue/2014/07/31/1800/000001.log"); reading a time span
// downloads only the blobs that overlap it.
func ExampleBlobLog() {
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	logs, err := patterns.NewBlobLog(acct, "exlogs", "queue", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := logs.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	at := time.Date(2014, 7, 31, 18, 58, 0, 0, time.UTC)
	for i, text := range []string{"info: started", "error: disk full", "critical: stopped", "info: restarted"} {
		if err := logs.Append(at.Add(time.Duration(i)*time.Minute), text); err != nil { // no I/O
			log.Fatal(err)
		}
	}
	if err := logs.Flush(ctx, nil); err != nil { // one blob per hour
		log.Fatal(err)
	}
	fmt.Println(patterns.BlobLogName("queue", at, 1))
	fmt.Println(patterns.BlobLogName("queue", at.Add(time.Hour), 1))

	// The error and critical messages between 18:59 and 19:01.
	for r, err := range logs.Read(ctx, at.Add(time.Minute), at.Add(3*time.Minute), nil) {
		if err != nil {
			log.Fatal(err)
		}
		if strings.HasPrefix(r.Text, "error") || strings.HasPrefix(r.Text, "critical") {
			fmt.Println(r.Time.Format(time.TimeOnly), r.Text)
		}
	}
	// At shutdown: stop the background flusher and flush what is buffered.
	if err := logs.Close(ctx, nil); err != nil {
		log.Fatal(err)
	}
	// Output:
	// queue/2014/07/31/1800/000001.log
	// queue/2014/07/31/1900/000001.log
	// 18:59:00 error: disk full
	// 19:00:00 critical: stopped
}
