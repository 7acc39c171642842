package main

import (
	"context"

	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
)

// wholeFlags are the flags of copy, backup, restore and verify.
type wholeFlags struct {
	parallel     int
	insert       bool
	verify       bool
	to, from     string
	since, base  string
	toTable      string
	segmentSize  string
	filter       string
	checkpoint   string
	backupOnly   bool
	restart      bool
	transactions int
	// distributed jobs
	distributed bool
	queue       string
	ranges      int
	wait        bool
	interval    time.Duration
}

func (a *app) wholeCommands() []*command {
	w := &a.whole
	parallel := func(fs *flag.FlagSet, what string) {
		fs.IntVar(&w.parallel, "parallel", patterns.DefaultScanParallel, what)
	}
	jsonFlag := func(fs *flag.FlagSet) { a.jsonFlag(fs, "print the summary as one JSON object") }
	// summaryDoc is the --json of copy, backup, restore and verify.
	summaryDoc := func(command, fields, more string) string {
		return `{"command":"` + command + `","ok","written","skipped",` + fields + `"resumed",
  "alreadyComplete","seconds","entitiesPerSecond","requests","verified":[{"table",
  "against","want":{"Count","Hash"},"got","segments","ranges","mismatches"}],
  "error"}` + more
	}
	jobDoc := `{"command":"job","ok","job","id","op","queue","ranges","state" ("complete",
  "running" or "failed"),"rangesDone","rangesFailed","entities","skipped",
  "entitiesPerSecond","failed":[ranges with their error],"manifest","verified",
  "error"}`
	const exitsVerify = `0 done (and verified, with --verify); 1 failed, or --verify found a difference
(listed on stderr); 2 usage error, before any request.`
	distributed := func(fs *flag.FlagSet) {
		fs.BoolVar(&w.distributed, "distributed", false, "run as a job on tablekit-worker replicas: split into --ranges key ranges, one message each on --queue, and return (see tablekit job)")
		fs.StringVar(&w.queue, "queue", "", "with --distributed: the queue, in the connected account, that the workers read")
		fs.IntVar(&w.ranges, "ranges", tablecopy.DefaultJobRanges, "key ranges per table: with --distributed, one message each; a backup's each have their own segments, and verify compares by them")
		fs.BoolVar(&w.wait, "wait", false, "with --distributed: watch the job until it ends, as tablekit job watch does (--verify implies it)")
	}
	return []*command{
		{
			name: "copy", args: "SRC DST", summary: "copy a table to another, in this account or another one", minArgs: 2, maxArgs: 2, needConn: true,
			about: `Copies every entity of table SRC (in the connected account) to table DST (in
the account of the --dest- flags, or the same one), every property and EDM
type exactly, Tk* properties included, reading key ranges of SRC in parallel
and writing through the bulk writer. Entities are upserted (replaced);
--insert refuses entities that exist in DST. DST is created if missing.

A checkpoint beside DST (an entity of --checkpoint-table in DST's account)
holds the scan's position after each page: run the same command again after
an interruption, even a kill, and it continues, reading back only the pages
the interrupted run had in flight and skipping the entities already identical
in DST. Once the copy completed, the same command does nothing (--restart
copies again). --verify then reads both tables and compares their entities
range by range. Shows progress on a terminal.

--filter FILTER (OData $filter text, as query and export take it) copies only
the entities it matches; the copy still reads every key range of SRC, and
--verify then compares them with DST's entities that FILTER matches.

--distributed --queue Q starts the copy as a job instead: SRC is split into
--ranges key ranges, the job is recorded in --checkpoint-table, one message
per range goes to Q, and tablekit-worker replicas reading Q copy the ranges,
each with its own checkpoint. It prints the job's reference; tablekit job
watch follows it (--wait or --verify here do so at once).`,
			jsonDoc: summaryDoc("copy", `"throttled",`, `: "written" entities were copied, "skipped" were
  identical in DST already (a resumed copy); "seconds" and "entitiesPerSecond"
  are the copy's, without --verify. With --distributed (and without --wait): the
  job as it started, `+jobDoc[:len(jobDoc)-len(`"error"}`)]+`...}.`),
			exits:   exitsVerify,
			example: "tablekit copy Orders OrdersCopy --verify\n  tablekit copy Orders Orders --dest-connection-string \"$OTHER_ACCOUNT\" --insert\n  tablekit copy Orders OrdersCopy --filter \"Status eq 'open'\" --distributed --queue copies --ranges 32",
			flags: func(fs *flag.FlagSet) {
				parallel(fs, "key ranges read and written at once")
				fs.BoolVar(&w.insert, "insert", false, "insert: refuse entities that exist in DST (default: upsert, replacing)")
				fs.StringVar(&w.filter, "filter", "", "copy only the entities matching this OData $filter text")
				fs.BoolVar(&w.verify, "verify", false, "compare SRC and DST afterwards; a difference exits 1")
				fs.IntVar(&w.transactions, "concurrency", 8, "transactions in flight per key range")
				fs.StringVar(&w.checkpoint, "checkpoint-table", tablecopy.DefaultCheckpointTable, "table in DST's account holding the checkpoints of copies")
				fs.BoolVar(&w.restart, "restart", false, "discard this copy's checkpoint (unfinished or finished) and copy from the start")
				jsonFlag(fs)
				distributed(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "DST")
			},
			run: a.cmdCopy,
		},
		{
			name: "backup", args: "TABLE...", summary: "back tables up to a directory or blob prefix (full or incremental)", minArgs: 1, maxArgs: 1000, needConn: true,
			about: `Backs up each TABLE to --to DEST, a local directory or blob://CONTAINER/PREFIX
(in the account of the --dest- flags, or the connected one): each table cut
into --ranges key ranges, each range's entities in its own gzip JSON lines
segments (the format of export, closed at --segment-size), a key list per
table, and last manifest.json with the ranges, each segment's key span,
entity count and checksum, and the backup's window (start and end). A table being written is backed up fuzzily: see
docs/COPY.md for what is guaranteed.

--base MANIFEST (an earlier backup's location or manifest.json) makes an
incremental backup: the entities whose Timestamp is later than the base's
start, and the keys deleted since the base (a key-only listing diffed with
the base's key list). --since TIME backs up the entities changed since TIME
only, without deleted keys.

A checkpoint in DEST holds each table's position and each segment's length
after every page: run the same command again after an interruption and it
continues. --verify reads the backup back and compares it with the tables.

--distributed --queue Q starts the backup as a job instead: each TABLE is
split into --ranges key ranges, the job is recorded in DEST/job/, one
message per range goes to Q, tablekit-worker replicas back the ranges up
into their own segments, and the last range to finish writes the key lists
and manifest.json. Full, --since and --base backups (with --base, this
command lists the keys first). DEST is blob://, or a directory that every
worker mounts at the same path and allows with --job-dir (docs/COPY.md says
what the filesystem must do).`,
			jsonDoc: summaryDoc("backup", "", `, with "manifest" (the backup's
  manifest.json). With --distributed: the job, as copy's.`),
			exits:   exitsVerify,
			example: "tablekit backup Orders Customers --to /backups/2024-06-01\n  tablekit backup Orders --to blob://backups/orders/day2 --base blob://backups/orders/day1 --verify\n  tablekit backup Orders --to /shared/backups/day3 --base /shared/backups/day2 --distributed --queue copies",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&w.to, "to", "", "where to write the backup: a directory, or blob://CONTAINER/PREFIX (required)")
				parallel(fs, "key ranges read at once")
				fs.StringVar(&w.since, "since", "", "back up only entities changed after TIME (RFC 3339, e.g. 2024-06-01T00:00:00Z), without deleted keys")
				fs.StringVar(&w.base, "base", "", "incremental backup on the backup at MANIFEST (its location or manifest.json)")
				fs.StringVar(&w.segmentSize, "segment-size", "64MiB", "close a segment past this size (bytes, or with KiB, MiB, GiB)")
				fs.BoolVar(&w.verify, "verify", false, "read the backup back and compare it with the tables; a difference exits 1")
				jsonFlag(fs)
				distributed(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "a blob:// DEST")
			},
			run: a.cmdBackup,
		},
		{
			name: "restore", args: "[TABLE...]", summary: "restore tables from a backup (and its incremental chain)", maxArgs: 1000, needConn: true,
			about: `Writes the tables of the backup at --from DEST (every one, or each TABLE) into
the connected account through the bulk writer, under their own names or
--to-table NAME (one table). An incremental backup is applied on its chain
of bases, oldest first: each backup's deleted keys are deleted, then its
entities upserted (or inserted with --insert, which refuses entities that
existed in the target before the restore). Missing tables are created.

A checkpoint in DEST (restore-HASH.json) holds the pages written of each
segment: run the same command again after an interruption and it
continues, reading back the few pages the interrupted run may have written
and skipping the entities identical in the target. Once the restore
completed, the same command does nothing (--restart restores again).
--verify compares the restored tables with the backup afterwards.`,
			jsonDoc: summaryDoc("restore", `"deleted","throttled",`, `: "deleted" keys were deleted
  as the incremental backups of the chain say.`),
			exits:   exitsVerify,
			example: "tablekit restore --from /backups/2024-06-01 Orders --to-table OrdersRestored --verify",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&w.from, "from", "", "the backup: a directory, or blob://CONTAINER/PREFIX (required)")
				fs.StringVar(&w.toTable, "to-table", "", "restore the one TABLE under this name")
				fs.IntVar(&w.parallel, "parallel", tablecopy.DefaultRestoreParallel, "segments written at once")
				fs.BoolVar(&w.insert, "insert", false, "insert: refuse entities that exist in the target (default: upsert, replacing)")
				fs.BoolVar(&w.verify, "verify", false, "compare the restored tables with the backup afterwards; a difference exits 1")
				fs.IntVar(&w.transactions, "concurrency", 8, "transactions in flight per segment")
				fs.BoolVar(&w.restart, "restart", false, "discard this restore's checkpoint (unfinished or finished) and restore from the start")
				jsonFlag(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "a blob:// backup")
			},
			run: a.cmdRestore,
		},
		{
			name: "verify", args: "[TABLE...]", summary: "check a backup, and compare it with tables", maxArgs: 1000, needConn: true,
			about: `Reads the backup at --from DEST back (its chain of bases too): each segment's
entity count and checksum against the manifest, each key list against the
segments and deleted keys. Then, unless --backup-only, reads each TABLE of
the connected account (or --to-table NAME) and compares its entities with
those the backup restores, in key ranges: each range that differs is named
with its first and last key and the keys missing, extra or changed. Exits 1
on any difference. A table written since the backup differs by those writes.
The summary counts the entities compared: the backup's (its chain applied)
and the tables'.`,
			jsonDoc: `{"command":"verify","ok","backupEntities","tableEntities","compared",
  "seconds","entitiesPerSecond","requests","verified":[{"table","against","want":
  {"Count","Hash"},"got","segments","ranges","mismatches"}],"error"}: "compared"
  is backupEntities + tableEntities, and entitiesPerSecond its rate.`,
			exits: `0 the backup (and the tables) check out; 1 a difference (listed on stderr) or
a failure; 2 usage error, before any request.`,
			example: "tablekit verify --from /backups/2024-06-01 Orders --to-table OrdersRestored",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&w.from, "from", "", "the backup: a directory, or blob://CONTAINER/PREFIX (required)")
				fs.StringVar(&w.toTable, "to-table", "", "compare the one TABLE of the backup with this table")
				fs.BoolVar(&w.backupOnly, "backup-only", false, "check the backup's files only, reading no table")
				parallel(fs, "key ranges of a table read at once")
				jsonFlag(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "a blob:// backup")
			},
			run: a.cmdVerify,
		},
		{
			name: "job status", args: "JOB", summary: "show a distributed copy or backup: ranges done, entities, failures", minArgs: 1, maxArgs: 1, needConn: true,
			about: `Shows the job JOB (the reference that copy --distributed or backup
--distributed printed: table://CHECKPOINTTABLE/ID in DST's account, or the
backup's blob://CONTAINER/PREFIX): its ranges done and failed, the entities
written, the rate, and each failed range with its error (from its state, or
its record in the job queue's poison queue).`,
			jsonDoc: jobDoc,
			exits: `0 the job is complete; 1 a range failed, or its state could not be read; 2
usage error; 3 the job still runs.`,
			example: "tablekit job status table://TablekitCheckpoints/j20240601-120000-0a1b2c3d --json",
			flags: func(fs *flag.FlagSet) {
				jsonFlag(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "the job (a copy's DST, a backup's DEST)")
			},
			run: a.cmdJobStatus,
		},
		{
			name: "job watch", args: "JOB", summary: "follow a distributed job until it ends; --verify then", minArgs: 1, maxArgs: 1, needConn: true,
			about: `Follows the job JOB (see job status) every --interval, with a progress line on
a terminal, until every range is done (exit 0) or a range failed (exit 1).
A backup whose ranges are all done gets its manifest written here if no
worker has written it yet. --verify then compares the copy with its source
(as copy --verify), or reads the backup back and compares it with the tables
(as verify).`,
			jsonDoc: jobDoc + ` once the job ended.`,
			exits: `0 the job completed (and verified, with --verify); 1 a range failed, --verify
found a difference, or the job could not be read; 2 usage error.`,
			example: "tablekit job watch blob://backups/orders/day3 --verify",
			flags: func(fs *flag.FlagSet) {
				fs.DurationVar(&w.interval, "interval", 2*time.Second, "how often to read the job's state")
				fs.BoolVar(&w.verify, "verify", false, "verify the result once the job is complete; a difference exits 1")
				parallel(fs, "key ranges read at once by --verify")
				jsonFlag(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "the job (a copy's DST, a backup's DEST)")
			},
			run: a.cmdJobWatch,
		},
		{
			name: "job requeue", args: "JOB", summary: "send the messages of a job's unfinished ranges again", minArgs: 1, maxArgs: 1, needConn: true,
			about: `Sends the message of every range of JOB that is not done to the job's queue
(or --queue) again: after its start was interrupted before sending them all,
or after its poisoned messages were dropped once the cause was fixed. A
range whose message is still queued gets a second one, which is safe: the
later delivery takes the range over from its checkpoint.`,
			jsonDoc: `{"command":"job requeue","ok":true,"job","id","queue","sent"}`,
			example: "tablekit job requeue table://TablekitCheckpoints/j20240601-120000-0a1b2c3d",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&w.queue, "queue", "", "send to this queue instead of the job's")
				jsonFlag(fs)
				a.dest.RegisterPrefixed(fs, "dest-", "the job (a copy's DST, a backup's DEST)")
			},
			run: a.cmdJobRequeue,
		},
	}
}

// destAccount is the account of the --dest- flags, or the connected one.
func (a *app) destAccount() (*tablekit.Account, error) {
	if !a.dest.Given() {
		return a.acct, nil
	}
	return a.dest.Connect(&tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{a.counter}}})
}

func (a *app) checkParallel() error {
	if a.whole.parallel < 1 {
		return usagef("--parallel %d: want 1 or more", a.whole.parallel)
	}
	if a.whole.transactions < 0 {
		return usagef("--concurrency %d: want 1 or more", a.whole.transactions)
	}
	if (a.whole.distributed || a.whole.to != "") && (a.whole.ranges < 1 || a.whole.ranges > 1000) {
		return usagef("--ranges %d: want 1 to 1000", a.whole.ranges)
	}
	return nil
}

// location parses a --to or --from value: blob:// locations are in the
// dest- account (or the connected one).
func (a *app) location(flagName, s string) (*tablecopy.Location, error) {
	if s == "" {
		return nil, usagef("--%s is required", flagName)
	}
	acct := a.acct
	if strings.HasPrefix(s, tablecopy.BlobScheme) {
		var err error
		if acct, err = a.destAccount(); err != nil {
			return nil, err
		}
	}
	l, err := tablecopy.ParseLocation(s, acct)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return l, nil
}

// summary is what --json prints.
type summary struct {
	Command string `json:"command"`
	OK      bool   `json:"ok"`
	Written int64  `json:"written"`
	Skipped int64  `json:"skipped"`
	Deleted int64  `json:"deleted,omitempty"`
	// ViewsElsewhere is copy's: entities whose views in other tables the
	// copy did not carry (tablecopy.CopyResult.ViewsElsewhere).
	ViewsElsewhere int64 `json:"viewsElsewhere,omitempty"`
	// Throttled counts throttling answers of the target, each retried.
	Throttled int64 `json:"throttled,omitempty"`
	Resumed   bool  `json:"resumed"`
	// BackupEntities, TableEntities and Compared are verify's: the
	// entities of the backup (its chain applied) and of the tables it
	// compared, and their sum, which its rate counts.
	BackupEntities int64 `json:"backupEntities,omitempty"`
	TableEntities  int64 `json:"tableEntities,omitempty"`
	Compared       int64 `json:"compared,omitempty"`
	// AlreadyComplete: the same command had finished before; nothing done.
	AlreadyComplete bool                   `json:"alreadyComplete,omitempty"`
	Seconds         float64                `json:"seconds"`
	Rate            float64                `json:"entitiesPerSecond"`
	Requests        int64                  `json:"requests"`
	Manifest        *tablecopy.Manifest    `json:"manifest,omitempty"`
	Verified        []tablecopy.TableCheck `json:"verified,omitempty"`
	Error           string                 `json:"error,omitempty"`
}

// finish prints the summary (JSON, or sentence on stdout) and the
// verification's mismatches on stderr, and returns the command's error.
// s.Seconds is the time of the copy, backup or restore itself (without
// the verification), or else of the whole command.
func (a *app) finish(s summary, start time.Time, human string, err error) error {
	if s.Seconds == 0 {
		s.Seconds = time.Since(start).Seconds()
	}
	if s.Seconds > 0 {
		done := s.Written
		if s.Command == "verify" {
			done = s.Compared
		}
		s.Rate = float64(done) / s.Seconds
	}
	s.Requests = int64(a.counter.Take())
	if err != nil {
		// The command itself failed: its line says so, and claims none
		// of the success its summary would (a restore of a damaged
		// backup printed "restored 49 entities" before its error).
		human = s.Command + " FAILED"
		if s.Written > 0 {
			human += " after writing " + cliconn.Count(s.Written, "entity", "entities")
		}
		human += "; the error follows on stderr"
	}
	err = a.reportMismatches(s.Verified, err)
	s.OK = err == nil
	if err != nil {
		s.Error = tablekit.Redact(err.Error())
	}
	if a.json {
		if jerr := cliconn.JSONLine(a.stdout, s); err == nil {
			err = jerr
		}
	} else {
		fmt.Fprintf(a.stdout, "%s (%v, %.0f entities/s)\n", human, time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond), s.Rate)
		for _, c := range s.Verified {
			against := "its own files"
			if c.Against != "" {
				against = c.Against
			}
			state := "verified"
			if !c.OK() {
				state = "DIFFERS"
			}
			fmt.Fprintf(a.stdout, "%s %s against %s: %v in %s\n", state, c.Table, against, c.Want, cliconn.Count(c.Ranges, "range", ""))
		}
	}
	return err
}

func (a *app) cmdCopy(ctx context.Context, args []string) error {
	if err := a.checkParallel(); err != nil {
		return err
	}
	dacct, err := a.destAccount()
	if err != nil {
		return err
	}
	src, err := patterns.NewTable[entity.Entity](a.acct, args[0], nil)
	if err != nil {
		return err
	}
	dst, err := patterns.NewTable[entity.Entity](dacct, args[1], nil)
	if err != nil {
		return err
	}
	filter, err := parseFilter(a.whole.filter)
	if err != nil {
		return err
	}
	if a.whole.distributed {
		if a.whole.restart {
			return usagef("--restart does not apply to --distributed: a job starts afresh")
		}
		q, err := a.jobQueue()
		if err != nil {
			return err
		}
		job, err := tablecopy.StartCopyJob(ctx, src, dst, q, &tablecopy.JobOptions{Ranges: a.whole.ranges, Parallel: a.whole.parallel, Filter: filter, Insert: a.whole.insert,
			Concurrency: a.whole.transactions, CheckpointTable: a.whole.checkpoint})
		return a.started(ctx, job, err)
	}
	a.counter.Reset()
	start := time.Now()
	bar := a.startProgress("copying", start)
	res, err := tablecopy.Copy(ctx, src, dst, &tablecopy.CopyOptions{Filter: filter, Parallel: a.whole.parallel, Insert: a.whole.insert,
		Concurrency: a.whole.transactions, CheckpointTable: a.whole.checkpoint, Restart: a.whole.restart, Progress: bar.update})
	bar.stop()
	if errors.Is(err, tablekit.ErrInvalidArgument) && !errors.Is(err, tablekit.ErrInvalidEntity) {
		return usageError{err.Error()}
	}
	s := summary{Command: "copy", Written: res.Written, Skipped: res.Skipped, Resumed: res.Resumed, AlreadyComplete: res.AlreadyComplete, Throttled: res.Throttled, Seconds: time.Since(start).Seconds()}
	human := fmt.Sprintf("copied %s from %s to %s", cliconn.Count(res.Written, "entity", "entities"), src.Name(), dst.Name())
	if res.AlreadyComplete {
		human = fmt.Sprintf("the copy of %s to %s is complete already (its checkpoint in %s says so); nothing to do, --restart copies again", src.Name(), dst.Name(), a.whole.checkpoint)
	}
	if res.Resumed {
		human += fmt.Sprintf("; resumed from a checkpoint, %d already in %s were skipped", res.Skipped, dst.Name())
	}
	if res.ViewsElsewhere > 0 {
		s.ViewsElsewhere = res.ViewsElsewhere
		human += fmt.Sprintf("; %s of a patterns.Model name views in other tables, which a copy does not carry: their lists now name %s alone, and the Model's Repair on %s writes the rest", cliconn.Count(res.ViewsElsewhere, "entity", "entities"), dst.Name(), dst.Name())
	}
	if err == nil && a.whole.verify {
		var chk tablecopy.TableCheck
		bar = a.startProgress("verifying", time.Now())
		chk, err = tablecopy.Compare(ctx, src, dst, &tablecopy.VerifyOptions{Filter: filter, Parallel: a.whole.parallel, Progress: bar.update})
		bar.stop()
		s.Verified = []tablecopy.TableCheck{chk}
	}
	return a.finish(s, start, human, err)
}

// parseSize reads 64MiB, 512KiB, 1GiB or a number of bytes.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("want a positive size such as 64MiB")
	}
	return n * mult, nil
}

func (a *app) cmdBackup(ctx context.Context, args []string) error {
	w := &a.whole
	if err := a.checkParallel(); err != nil {
		return err
	}
	seg, err := parseSize(w.segmentSize)
	if err != nil {
		return usagef("--segment-size %q: %v", w.segmentSize, err)
	}
	if w.since != "" && w.base != "" {
		return usagef("give --since or --base, not both")
	}
	o := &tablecopy.BackupOptions{Parallel: w.parallel, Ranges: w.ranges, SegmentBytes: seg}
	if w.since != "" {
		t, err := time.Parse(time.RFC3339Nano, w.since)
		if err != nil {
			return usagef("--since %q: want an RFC 3339 time such as 2024-06-01T00:00:00Z", w.since)
		}
		o.Since = t
	}
	to, err := a.location("to", w.to)
	if err != nil {
		return err
	}
	if w.base != "" {
		if o.Base, err = a.location("base", w.base); err != nil {
			return err
		}
	}
	if w.distributed {
		q, err := a.jobQueue()
		if err != nil {
			return err
		}
		job, err := tablecopy.StartBackupJob(ctx, a.acct, args, to, q, &tablecopy.JobOptions{Ranges: w.ranges, Parallel: w.parallel, Since: o.Since, Base: o.Base, SegmentBytes: seg})
		return a.started(ctx, job, err)
	}
	a.counter.Reset()
	start := time.Now()
	bar := a.startProgress("backing up", start)
	o.Progress = bar.update
	res, err := tablecopy.Backup(ctx, a.acct, args, to, o)
	bar.stop()
	if errors.Is(err, tablekit.ErrInvalidArgument) {
		return usageError{err.Error()}
	}
	s := summary{Command: "backup", Written: res.Entities, Skipped: res.Skipped, Resumed: res.Resumed, AlreadyComplete: res.AlreadyComplete, Manifest: res.Manifest, Seconds: time.Since(start).Seconds()}
	human := fmt.Sprintf("backed up %s of %s to %s", cliconn.Count(res.Entities, "entity", "entities"), cliconn.Count(len(args), "table", ""), to)
	switch {
	case res.AlreadyComplete:
		human = fmt.Sprintf("the backup in %s is complete already; nothing to do", to)
	case res.Resumed:
		human += fmt.Sprintf("; resumed from its checkpoint, %s already in the backup skipped", cliconn.Count(res.Skipped, "entity", "entities"))
	}
	if res.Manifest != nil {
		kind := res.Manifest.Kind
		human += fmt.Sprintf(" (%s backup, window %s to %s)", kind, res.Manifest.Start.Format(time.RFC3339), res.Manifest.End.Format(time.RFC3339))
	}
	if err == nil && w.verify {
		bar = a.startProgress("verifying", time.Now())
		s.Verified, err = tablecopy.VerifyBackup(ctx, to, &tablecopy.VerifyOptions{Account: a.acct, Parallel: w.parallel, Progress: bar.update})
		bar.stop()
	}
	return a.finish(s, start, human, err)
}

func (a *app) cmdRestore(ctx context.Context, args []string) error {
	w := &a.whole
	if err := a.checkParallel(); err != nil {
		return err
	}
	if w.toTable != "" && len(args) > 1 {
		return usagef("--to-table names one target: give one TABLE")
	}
	from, err := a.location("from", w.from)
	if err != nil {
		return err
	}
	a.counter.Reset()
	start := time.Now()
	bar := a.startProgress("restoring", start)
	res, err := tablecopy.Restore(ctx, from, a.acct, &tablecopy.RestoreOptions{Tables: args, ToTable: w.toTable, Parallel: w.parallel,
		Concurrency: w.transactions, Insert: w.insert, Restart: w.restart, Progress: bar.update})
	bar.stop()
	if errors.Is(err, tablekit.ErrInvalidArgument) && !errors.Is(err, tablekit.ErrInvalidEntity) {
		return usageError{err.Error()}
	}
	s := summary{Command: "restore", Written: res.Written, Skipped: res.Skipped, Deleted: res.Deleted, Resumed: res.Resumed, AlreadyComplete: res.AlreadyComplete, Throttled: res.Throttled, Seconds: time.Since(start).Seconds()}
	human := fmt.Sprintf("restored %s into %s from %s (%s of the chain, %s deleted)", cliconn.Count(res.Written, "entity", "entities"), cliconn.Count(len(res.Tables), "table", ""), from, cliconn.Count(res.Backups, "backup", ""), cliconn.Count(res.Deleted, "key", ""))
	if res.AlreadyComplete {
		human = fmt.Sprintf("the restore from %s is complete already (its checkpoint says so); nothing to do, --restart restores again", from)
	}
	if res.Resumed {
		human += fmt.Sprintf("; resumed from its checkpoint, %s already identical in the target skipped", cliconn.Count(res.Skipped, "entity", "entities"))
	}
	if err == nil && w.verify {
		bar = a.startProgress("verifying", time.Now())
		for src, target := range res.Tables {
			var chk []tablecopy.TableCheck
			chk, err = tablecopy.VerifyBackup(ctx, from, &tablecopy.VerifyOptions{Tables: []string{src}, ToTable: target, Account: a.acct, Parallel: w.parallel, Progress: bar.update})
			s.Verified = append(s.Verified, chk...)
			if err != nil {
				break
			}
		}
		bar.stop()
	}
	return a.finish(s, start, human, err)
}

func (a *app) cmdVerify(ctx context.Context, args []string) error {
	w := &a.whole
	if err := a.checkParallel(); err != nil {
		return err
	}
	if w.toTable != "" && len(args) != 1 {
		return usagef("--to-table compares one TABLE: give it")
	}
	from, err := a.location("from", w.from)
	if err != nil {
		return err
	}
	o := &tablecopy.VerifyOptions{Tables: args, ToTable: w.toTable, Parallel: w.parallel}
	if !w.backupOnly {
		o.Account = a.acct
	}
	a.counter.Reset()
	start := time.Now()
	bar := a.startProgress("verifying", start)
	o.Progress = bar.update
	checks, err := tablecopy.VerifyBackup(ctx, from, o)
	bar.stop()
	if errors.Is(err, tablekit.ErrInvalidArgument) {
		return usageError{err.Error()}
	}
	s := summary{Command: "verify", Verified: checks}
	for _, c := range checks {
		s.BackupEntities += c.Want.Count
		s.TableEntities += c.Got.Count
	}
	s.Compared = s.BackupEntities + s.TableEntities
	human := fmt.Sprintf("checked %s of %s: %s of the backup", cliconn.Count(len(checks), "table", ""), from, cliconn.Count(s.BackupEntities, "entity", "entities"))
	if !w.backupOnly {
		human += fmt.Sprintf(" compared with %d of the tables", s.TableEntities)
	}
	return a.finish(s, start, human, err)
}

// progressBar shows the latest Progress on a terminal, four times a
// second; off a terminal it shows nothing.
type progressBar struct {
	mu    sync.Mutex
	last  tablecopy.Progress
	done  chan struct{}
	ended chan struct{}
}

func (b *progressBar) update(p tablecopy.Progress) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.last = p
	b.mu.Unlock()
}

func (b *progressBar) stop() {
	if b == nil {
		return
	}
	close(b.done)
	<-b.ended
}

// startProgress starts a progress line on a terminal (nil otherwise:
// nothing but errors goes to stderr, and progress to nowhere).
func (a *app) startProgress(verb string, start time.Time) *progressBar {
	if !a.terminal {
		return nil
	}
	b := &progressBar{done: make(chan struct{}), ended: make(chan struct{})}
	out := a.stdout
	go func() {
		defer close(b.ended)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.done:
				fmt.Fprint(out, "\r\033[K")
				return
			case <-t.C:
				b.mu.Lock()
				p := b.last
				b.mu.Unlock()
				writeProgress(out, verb, p, time.Since(start))
			}
		}
	}()
	return b
}

// writeProgress writes one progress line: entities, rate, ranges, ETA
// when the total is known.
func writeProgress(w io.Writer, verb string, p tablecopy.Progress, elapsed time.Duration) {
	rate := float64(p.Entities) / max(elapsed.Seconds(), 1e-3)
	line := fmt.Sprintf("%s %s: %s (%.0f/s)", verb, p.Table, cliconn.Count(p.Entities, "entity", "entities"), rate)
	if p.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", p.Skipped)
	}
	if p.Ranges > 0 {
		line += fmt.Sprintf(", ranges %d/%d", p.RangesDone, p.Ranges)
	}
	if p.Total > 0 && rate > 0 && p.Entities <= p.Total {
		eta := time.Duration(float64(p.Total-p.Entities) / rate * float64(time.Second))
		line += fmt.Sprintf(", %d%%, ETA %v", p.Entities*100/p.Total, eta.Round(time.Second))
	}
	fmt.Fprintf(w, "\r\033[K%s", line)
}

// reportMismatches lists on stderr every difference a verification found,
// and turns them into err when err is nil.
func (a *app) reportMismatches(checks []tablecopy.TableCheck, err error) error {
	mismatches := 0
	for _, c := range checks {
		for _, m := range c.Mismatches {
			mismatches++
			fmt.Fprintf(a.stderr, "mismatch: %s\n", m)
		}
	}
	if err == nil && mismatches > 0 {
		what := cliconn.Count(mismatches, "range or file differs", "ranges or files differ")
		err = fmt.Errorf("verification failed: %s (listed above)", what)
	}
	return err
}
