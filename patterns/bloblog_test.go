package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestBlobLogGuideStorageAnalyticsLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	container := testenv.ContainerName(t)
	if _, err := acct.Blobs().CreateContainer(ctx, container, nil); err != nil {
		t.Fatal(err)
	}
	if got := patterns.BlobLogName("queue", time.Date(2014, 7, 31, 18, 42, 0, 0, time.UTC), 1); got != "queue/2014/07/31/1800/000001.log" {
		t.Errorf("BlobLogName = %q, want the guide's queue/2014/07/31/1800/000001.log", got)
	}
	// No background flush during the test: only explicit ones and Close.
	l, err := patterns.NewBlobLog(acct, container, "queue", &patterns.BlobLogOptions{FlushInterval: time.Hour, FlushSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	day := time.Date(2014, 7, 31, 0, 0, 0, 0, time.UTC)
	// 15:00 to 16:59, one record every 30 s, errors every 4th.
	for i := 0; i < 240; i++ {
		at := day.Add(15*time.Hour + time.Duration(i)*30*time.Second)
		level := "Info"
		if i%4 == 0 {
			level = "Error"
		}
		if err := l.Append(at, fmt.Sprintf("%s;record %d", level, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append(day.Add(15*time.Hour+5*time.Minute+1), "Critical;multi\nline \\ text"); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 0, "buffered appends")
	if err := l.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 4, "a flush over two hours (list + upload per hour)")
	// A second batch in hour 15 creates the next blob.
	if err := l.Append(day.Add(15*time.Hour+5*time.Minute+30*time.Second+1), "Error;late arrival"); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "a flush of one hour already seen")

	var names []string
	pager := acct.Blobs().NewListBlobsFlatPager(container, nil)
	for pager.More() {
		p, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range p.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	if fmt.Sprint(names) != "[queue/2014/07/31/1500/000001.log queue/2014/07/31/1500/000002.log queue/2014/07/31/1600/000001.log]" {
		t.Errorf("blobs = %v", names)
	}
	c.Reset()

	// The guide's query: error and critical messages between 15:04 and
	// 15:06 on that date, found by the prefix queue/2014/07/31/1500.
	var got []string
	for r, err := range l.Read(ctx, day.Add(15*time.Hour+4*time.Minute), day.Add(15*time.Hour+6*time.Minute), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.Text, "Error;") || strings.HasPrefix(r.Text, "Critical;") {
			got = append(got, r.Time.Format("15:04:05")+" "+r.Text)
		}
	}
	want := "[15:04:00 Error;record 8 15:05:00 Critical;multi\nline \\ text 15:05:30 Error;late arrival]"
	if fmt.Sprint(got) != want {
		t.Errorf("15:04-15:06 errors = %q\nwant %q", got, want)
	}
	requests(t, c, 3, "a read of one hour (list + two blobs)")

	// Records buffered at shutdown survive: Close flushes them.
	for i := 0; i < 10; i++ {
		if err := l.Append(day.Add(16*time.Hour+59*time.Minute+time.Duration(i)), fmt.Sprint("Info;shutdown ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(day, "too late"); !errors.Is(err, patterns.ErrLogClosed) {
		t.Errorf("Append after Close = %v, want ErrLogClosed", err)
	}
	// A new log (another process) reads them back.
	l2, err := patterns.NewBlobLog(acct, container, "queue", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close(ctx, nil)
	n := 0
	for r, err := range l2.Read(ctx, day.Add(16*time.Hour+59*time.Minute), day.Add(17*time.Hour), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.Text, "Info;shutdown ") {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d of 10 records buffered at shutdown were read back", n)
	}
}

func TestBlobLogFlushesBySizeAndTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	container := testenv.ContainerName(t)
	if _, err := acct.Blobs().CreateContainer(ctx, container, nil); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	count := func(src string) int {
		reader, err := patterns.NewBlobLog(acct, container, src, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close(ctx, nil)
		recs, err := patterns.Collect(reader.Read(ctx, at, at.Add(time.Hour), nil))
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	wait := func(src string, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for count(src) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d records flushed, want %d", src, count(src), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	bySize, err := patterns.NewBlobLog(acct, container, "size", &patterns.BlobLogOptions{FlushSize: 4096, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer bySize.Close(ctx, nil)
	// A record counts its text plus 40 bytes: the 56th of these crosses
	// 4 KiB and starts the flush, which takes every record buffered then.
	// (Appending more after it would race with the flush: the records
	// after its start wait for the next threshold or interval.)
	const text = "Info;a record of some twenty bytes"
	n := 4096/(len(text)+40) + 1
	for i := range n {
		if err := bySize.Append(at.Add(time.Duration(i)*time.Second), text); err != nil {
			t.Fatal(err)
		}
	}
	wait("size", n)
	byTime, err := patterns.NewBlobLog(acct, container, "time", &patterns.BlobLogOptions{FlushInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer byTime.Close(ctx, nil)
	if err := byTime.Append(at, "Info;one"); err != nil {
		t.Fatal(err)
	}
	wait("time", 1)
}
