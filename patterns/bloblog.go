package patterns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// ErrLogBufferFull is returned by BlobLog.Append when the records waiting
// to be flushed reach BlobLogOptions.MaxBuffer (flushes keep failing).
var ErrLogBufferFull = errors.New("tablekit: blob log buffer is full; flushes are failing")

// ErrLogClosed is returned by BlobLog.Append after Close.
var ErrLogClosed = errors.New("tablekit: blob log is closed")

// Metadata keys of a log blob: the times of its first and last records
// (RFC 3339, UTC, 100 ns), as Storage Analytics records them.
const (
	BlobLogStartMetadata = "StartTime"
	BlobLogEndMetadata   = "EndTime"
)

// LogRecord is one record of a BlobLog.
type LogRecord struct {
	Time time.Time
	Text string
}

// BlobLogOptions configures a BlobLog. A nil *BlobLogOptions means the
// defaults.
type BlobLogOptions struct {
	// FlushSize starts a flush when this many bytes are buffered.
	// Default 1 MiB.
	FlushSize int
	// FlushInterval flushes buffered records at least this often.
	// Default 10 s.
	FlushInterval time.Duration
	// MaxBuffer bounds the bytes buffered while flushes fail; Append
	// then returns ErrLogBufferFull. Default 64 MiB.
	MaxBuffer int
}

// BlobLog is the guide's answer to the log data anti-pattern ("you should
// use Blob storage instead of Table storage to store log data"), done as
// it describes Storage Analytics doing it: records are buffered in memory
// and written in batches to blobs named
//
//	<source>/YYYY/MM/DD/hhmm/000001.log
//
// one series per hour of the records' times ("queue/2014/07/31/1800/
// 000001.log" holds records of 18:00 to 19:00 on July 31, 2014), each
// flush creating the next blob of its hour, with the times of its first
// and last records in the blob's metadata. Reads over a time range list
// the hours' prefixes and download only the blobs whose times overlap.
//
// Each record is one line: its time (RFC 3339, UTC, 7 fractional digits),
// ';', and its text with '\', newline and carriage return escaped as \\,
// \n and \r. A flush writes each hour's records sorted by time, with one
// request per hour touched (plus one listing the first time an hour is
// seen); a blob is never overwritten (If-None-Match: *), so several writers
// of one source take turns at sequence numbers.
//
// Records buffered when the process dies are lost: that is the trade-off
// between reliability and cost the guide asks you to weigh. Call Close at
// shutdown to flush them. A BlobLog is safe for concurrent use.
type BlobLog struct {
	acct      *tablekit.Account
	container string
	source    string
	opts      BlobLogOptions

	mu      sync.Mutex
	buf     []LogRecord
	bytes   int
	closed  bool
	lastErr error

	flushMu sync.Mutex
	next    map[time.Time]int // next sequence number per hour

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewBlobLog returns a log of source (1 to 256 ASCII letters, digits,
// '-', '_' or '.') in container, and starts its background flusher; call
// Close to stop it. It makes no request; call CreateIfNotExists to create
// the container.
func NewBlobLog(acct *tablekit.Account, containerName, source string, opts *BlobLogOptions) (*BlobLog, error) {
	if acct == nil || acct.Blobs() == nil {
		return nil, tkerr.Errorf("tablekit: blob log %s: %w", source, tablekit.ErrNoEndpoint)
	}
	if err := keys.ValidateContainerName(containerName); err != nil {
		return nil, err
	}
	if source == "" || len(source) > 256 || strings.Trim(source, ".") == "" || strings.IndexFunc(source, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return nil, tkerr.Errorf("tablekit: blob log: %w: source %q must be 1 to 256 ASCII letters, digits, '-', '_' or '.'", tablekit.ErrInvalidName, source)
	}
	o := optsOf(opts)
	if o.FlushSize <= 0 {
		o.FlushSize = 1 << 20
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 10 * time.Second
	}
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = 64 << 20
	}
	l := &BlobLog{acct: acct, container: containerName, source: source, opts: o, next: map[time.Time]int{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l, nil
}

// BlobLogName returns the name of blob number seq (from 1) of source for
// the hour containing t: "<source>/YYYY/MM/DD/hh00/<seq:6>.log".
func BlobLogName(source string, t time.Time, seq int) string {
	return blobLogPrefix(source, t) + keys.PadUint(uint64(max(seq, 0)), 6) + ".log"
}

func blobLogPrefix(source string, t time.Time) string {
	return source + "/" + t.UTC().Format("2006/01/02/15") + "00/"
}

func (l *BlobLog) run() {
	defer close(l.done)
	tick := time.NewTicker(l.opts.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		case <-l.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_ = l.Flush(ctx, nil) // kept in lastErr for the next Flush or Close
		cancel()
	}
}

// CreateIfNotExists creates the blob container; an existing one is not an
// error. One request.
func (l *BlobLog) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return createContainer(ctx, l.acct, l.container)
}

// Append buffers a record of time at. It does no I/O: a background flush
// starts when FlushSize bytes are buffered, and at least every
// FlushInterval. It fails with ErrLogBufferFull when flushes keep failing
// and MaxBuffer is reached, and with ErrLogClosed after Close.
func (l *BlobLog) Append(at time.Time, text string) error {
	size := len(text) + 40
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrLogClosed
	}
	if l.bytes+size > l.opts.MaxBuffer {
		return fmt.Errorf("%w (%d bytes buffered; last flush error: %v)", ErrLogBufferFull, l.bytes, l.lastErr)
	}
	l.buf = append(l.buf, LogRecord{Time: at.UTC().Truncate(100), Text: text})
	l.bytes += size
	if l.bytes >= l.opts.FlushSize {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Flush writes every buffered record now: one blob per hour the records
// fall in. Records whose blob could not be written stay buffered for the
// next flush, and the error is returned.
func (l *BlobLog) Flush(ctx context.Context, opts *FlushOptions) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	recs := l.buf
	l.buf, l.bytes = nil, 0
	l.mu.Unlock()

	hours := map[time.Time][]LogRecord{}
	for _, r := range recs {
		h := keys.Hour.Start(r.Time)
		hours[h] = append(hours[h], r)
	}
	var failed []LogRecord
	var errs []error
	order := make([]time.Time, 0, len(hours))
	for h := range hours {
		order = append(order, h)
	}
	slices.SortFunc(order, func(a, b time.Time) int { return a.Compare(b) })
	for _, h := range order {
		rs := hours[h]
		slices.SortStableFunc(rs, func(a, b LogRecord) int { return a.Time.Compare(b.Time) })
		if err := l.writeHour(ctx, h, rs); err != nil {
			failed = append(failed, rs...)
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	l.mu.Lock()
	if len(failed) > 0 {
		for _, r := range failed {
			l.bytes += len(r.Text) + 40
		}
		l.buf = append(failed, l.buf...)
	}
	if err != nil {
		l.lastErr = err
	}
	l.mu.Unlock()
	return err
}

func (l *BlobLog) writeHour(ctx context.Context, hour time.Time, rs []LogRecord) error {
	var body bytes.Buffer
	for _, r := range rs {
		body.WriteString(formatLogTime(r.Time))
		body.WriteByte(';')
		escapeLogText(&body, r.Text)
		body.WriteByte('\n')
	}
	seq, ok := l.next[hour]
	if !ok {
		n, err := l.lastSeq(ctx, hour)
		if err != nil {
			return err
		}
		seq = n + 1
	}
	start, end := formatLogTime(rs[0].Time), formatLogTime(rs[len(rs)-1].Time)
	ctype := "text/plain; charset=utf-8"
	noneMatch := azcore.ETagAny
	for tries := 0; tries < 100; tries++ {
		name := BlobLogName(l.source, hour, seq)
		_, err := l.acct.Blobs().UploadBuffer(ctx, l.container, name, body.Bytes(), &azblob.UploadBufferOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ctype},
			Metadata:    map[string]*string{BlobLogStartMetadata: &start, BlobLogEndMetadata: &end},
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
				IfNoneMatch: &noneMatch,
			}},
		})
		err = tablekit.MapError(err, "upload log blob", l.container+"/"+name)
		if errors.Is(err, tablekit.ErrAlreadyExists) || errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrConflict) {
			seq++ // another writer took this number
			continue
		}
		if err != nil {
			return err
		}
		l.next[hour] = seq + 1
		return nil
	}
	return fmt.Errorf("tablekit: blob log %s: no free sequence number near %d for %s", l.source, seq, hour.Format(time.RFC3339))
}

// lastSeq lists the hour's blobs and returns the highest sequence number.
func (l *BlobLog) lastSeq(ctx context.Context, hour time.Time) (int, error) {
	prefix := blobLogPrefix(l.source, hour)
	pager := l.acct.Blobs().NewListBlobsFlatPager(l.container, &container.ListBlobsFlatOptions{Prefix: &prefix})
	last := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, tablekit.MapError(err, "list log blobs", l.container+"/"+prefix)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(*b.Name, prefix), ".log"))
			if err == nil && n > last {
				last = n
			}
		}
	}
	return last, nil
}

// Close stops the background flusher and flushes what is buffered. It
// returns the error of that flush, or of an earlier background flush
// whose records could not be written since. Appends fail afterwards.
func (l *BlobLog) Close(ctx context.Context, opts *FlushOptions) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	return l.Flush(ctx, nil)
}

// Read returns the records with times in [from, to), in time order: for
// each hour of the span it lists the hour's prefix (one request) and
// downloads the blobs whose StartTime..EndTime metadata overlaps the span
// (one request each). Records still buffered are not seen. One hour's
// matching records are held in memory at a time.
func (l *BlobLog) Read(ctx context.Context, from, to time.Time, opts *ReadOptions) iter.Seq2[LogRecord, error] {
	return func(yield func(LogRecord, error) bool) {
		if !to.After(from) {
			return
		}
		for h := keys.Hour.Start(from); h.Before(to); h = h.Add(time.Hour) {
			recs, err := l.readHour(ctx, h, from, to)
			if err != nil {
				yield(LogRecord{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

func (l *BlobLog) readHour(ctx context.Context, hour, from, to time.Time) ([]LogRecord, error) {
	prefix := blobLogPrefix(l.source, hour)
	pager := l.acct.Blobs().NewListBlobsFlatPager(l.container, &container.ListBlobsFlatOptions{
		Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true},
	})
	var out []LogRecord
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, tablekit.MapError(err, "list log blobs", l.container+"/"+prefix)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
			start, okS := metaTime(b.Metadata, BlobLogStartMetadata)
			end, okE := metaTime(b.Metadata, BlobLogEndMetadata)
			if okS && okE && (!start.Before(to) || end.Before(from)) {
				continue // no record of this blob is in the span
			}
			recs, err := l.readBlob(ctx, *b.Name)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if !r.Time.Before(from) && r.Time.Before(to) {
					out = append(out, r)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b LogRecord) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func (l *BlobLog) readBlob(ctx context.Context, name string) ([]LogRecord, error) {
	resp, err := l.acct.Blobs().DownloadStream(ctx, l.container, name, nil)
	if err != nil {
		return nil, tablekit.MapError(err, "download log blob", l.container+"/"+name)
	}
	defer resp.Body.Close()
	var out []LogRecord
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		ts, text, ok := strings.Cut(sc.Text(), ";")
		t, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil {
			return nil, fmt.Errorf("tablekit: blob log %s/%s line %d: not a log record", l.container, name, line)
		}
		out = append(out, LogRecord{Time: t.UTC(), Text: unescapeLogText(text)})
	}
	if err := sc.Err(); err != nil {
		return nil, tablekit.MapError(err, "download log blob", l.container+"/"+name)
	}
	return out, nil
}

func metaTime(md map[string]*string, key string) (time.Time, bool) {
	for k, v := range md {
		if strings.EqualFold(k, key) && v != nil {
			t, err := time.Parse(time.RFC3339Nano, *v)
			return t, err == nil
		}
	}
	return time.Time{}, false
}

func formatLogTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.0000000Z")
}

func escapeLogText(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
}

func unescapeLogText(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
