package main

import (
	"context"

	"errors"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
)

// exitError ends the command with its own exit status (job status's 3
// while a job runs), printing msg when it is not empty.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// jobQueue is the --queue of a distributed copy or backup, in the
// connected account.
func (a *app) jobQueue() (*consistency.Queue, error) {
	if a.whole.queue == "" {
		return nil, usagef("--distributed needs --queue: the queue tablekit-worker replicas read")
	}
	return consistency.NewQueue(a.acct, a.whole.queue, nil)
}

// jobSummary is what --json prints for a job.
type jobSummary struct {
	Command string `json:"command"`
	OK      bool   `json:"ok"`
	Job     string `json:"job"` // the reference tablekit job takes
	ID      string `json:"id"`
	Op      string `json:"op"`
	Queue   string `json:"queue"`
	Ranges  int    `json:"ranges"`
	// status and watch
	State        string                  `json:"state,omitempty"` // "complete", "running" or "failed"
	RangesDone   int                     `json:"rangesDone"`
	RangesFailed int                     `json:"rangesFailed"`
	Entities     int64                   `json:"entities"`
	Skipped      int64                   `json:"skipped"`
	Rate         float64                 `json:"entitiesPerSecond"`
	Failed       []tablecopy.RangeStatus `json:"failed,omitempty"`
	Manifest     *tablecopy.Manifest     `json:"manifest,omitempty"`
	Verified     []tablecopy.TableCheck  `json:"verified,omitempty"`
	Error        string                  `json:"error,omitempty"`
}

// started reports a job the command started, then watches it with --wait
// or --verify.
func (a *app) started(ctx context.Context, job *tablecopy.Job, err error) error {
	if err != nil {
		if errors.Is(err, tablekit.ErrInvalidArgument) {
			return usageError{err.Error()}
		}
		return err
	}
	if a.whole.wait || a.whole.verify {
		if !a.json {
			fmt.Fprintf(a.stdout, "started %s job %s with %s on queue %s\n", job.Op, job.Ref, cliconn.Count(job.Ranges, "range", ""), job.Queue)
		}
		if a.whole.interval <= 0 {
			a.whole.interval = 2 * time.Second
		}
		return a.watch(ctx, job.Ref)
	}
	if a.json {
		return cliconn.JSONLine(a.stdout, jobSummary{Command: job.Op, OK: true, Job: job.Ref, ID: job.ID, Op: job.Op, Queue: job.Queue, Ranges: job.Ranges})
	}
	fmt.Fprintf(a.stdout, "started %s job %s with %s on queue %s\nfollow it: tablekit job watch %s\n", job.Op, job.Ref, cliconn.Count(job.Ranges, "range", ""), job.Queue, job.Ref)
	return nil
}

// readJob reads the job's status: the job in the dest- account (or the
// connected one), its poison queue in the connected account.
func (a *app) readJob(ctx context.Context, ref string) (*tablecopy.JobStatus, *tablekit.Account, error) {
	dacct, err := a.destAccount()
	if err != nil {
		return nil, nil, err
	}
	s, err := tablecopy.ReadJob(ctx, ref, dacct, &tablecopy.JobStatusOptions{QueueAccount: a.acct})
	if errors.Is(err, tablekit.ErrInvalidArgument) {
		return nil, nil, usageError{err.Error()}
	}
	return s, dacct, err
}

// summarize is the job summary of s, and its state.
func summarize(ref string, s *tablecopy.JobStatus) jobSummary {
	js := jobSummary{Command: "job", Job: ref, ID: s.ID, Op: s.Op, Queue: s.Queue, Ranges: len(s.Ranges), RangesDone: s.RangesDone,
		RangesFailed: s.RangesFailed, Entities: s.Entities, Skipped: s.Skipped, Manifest: s.Manifest}
	if d := s.Updated.Sub(s.Created).Seconds(); d > 0 {
		js.Rate = float64(s.Entities) / d
	}
	for _, r := range s.Ranges {
		if !r.Done && r.Error != "" {
			js.Failed = append(js.Failed, r)
		}
	}
	switch {
	case s.Complete:
		js.State = "complete"
	case s.RangesFailed > 0:
		js.State = "failed"
	default:
		js.State = "running"
	}
	return js
}

// describe is the one-line account of a job.
func describe(s *tablecopy.JobStatus, js jobSummary) string {
	what := fmt.Sprintf("%s of %v to %s", s.Op, s.Tables, s.ToTable)
	if s.Op == tablecopy.JobBackup {
		what = fmt.Sprintf("%s of %v to %s", s.Op, s.Tables, s.Location)
	}
	return fmt.Sprintf("job %s (%s): %s, %d/%s done, %d failed, %s (%.0f/s)", s.ID, what, js.State, js.RangesDone, cliconn.Count(js.Ranges, "range", ""), js.RangesFailed, cliconn.Count(js.Entities, "entity", "entities"), js.Rate)
}

// report prints js (JSON, or a line and the failed ranges).
func (a *app) report(s *tablecopy.JobStatus, js jobSummary) {
	for _, r := range js.Failed {
		what := "failed"
		if r.Poisoned {
			what = "poisoned"
		}
		fmt.Fprintf(a.stderr, "job %s range %d (table %s, %s) %s: %s\n", s.ID, r.Index, r.Table, cliconn.Count(r.Attempts, "attempt", ""), what, r.Error)
	}
	if a.json {
		_ = cliconn.JSONLine(a.stdout, js) // a failed write to stdout: nothing left to tell
		return
	}
	fmt.Fprintln(a.stdout, describe(s, js))
	for _, c := range js.Verified {
		state := "verified"
		if !c.OK() {
			state = "DIFFERS"
		}
		against := "its own files"
		if c.Against != "" {
			against = c.Against
		}
		fmt.Fprintf(a.stdout, "%s %s against %s: %v in %s\n", state, c.Table, against, c.Want, cliconn.Count(c.Ranges, "range", ""))
	}
}

func (a *app) cmdJobStatus(ctx context.Context, args []string) error {
	s, _, err := a.readJob(ctx, args[0])
	if err != nil {
		return err
	}
	js := summarize(args[0], s)
	js.OK = s.Complete
	a.report(s, js)
	switch js.State {
	case "complete":
		return nil
	case "failed":
		return exitError{1, ""}
	}
	return exitError{3, ""}
}

func (a *app) cmdJobWatch(ctx context.Context, args []string) error {
	if a.whole.interval <= 0 {
		return usagef("--interval %v: want a positive duration", a.whole.interval)
	}
	if err := a.checkParallel(); err != nil {
		return err
	}
	return a.watch(ctx, args[0])
}

// watch follows the job until it is complete or a range failed, then
// verifies it with --verify.
func (a *app) watch(ctx context.Context, ref string) error {
	var bar *progressBar
	if a.terminal {
		bar = a.startProgress("job", time.Now())
	}
	var s *tablecopy.JobStatus
	var dacct *tablekit.Account
	var err error
	for {
		s, dacct, err = a.readJob(ctx, ref)
		if err != nil {
			bar.stop()
			return err
		}
		if !s.Complete && s.Op == tablecopy.JobBackup && s.RangesDone == len(s.Ranges) {
			// Every range is done and no worker wrote the manifest yet (the
			// last one may have died first): write it (FinishJob is
			// idempotent, and race-free with a worker doing the same).
			if _, err := tablecopy.FinishJob(ctx, ref, dacct); err != nil {
				bar.stop()
				return err
			}
			continue
		}
		bar.update(tablecopy.Progress{Table: s.ID, Entities: s.Entities, Skipped: s.Skipped, Ranges: len(s.Ranges), RangesDone: s.RangesDone})
		if s.Complete || s.RangesFailed > 0 {
			break
		}
		select {
		case <-ctx.Done():
			bar.stop()
			return ctx.Err()
		case <-time.After(a.whole.interval):
		}
	}
	bar.stop()
	js := summarize(ref, s)
	if s.Complete && a.whole.verify {
		js.Verified, err = a.verifyJob(ctx, s, dacct)
	}
	err = a.reportMismatches(js.Verified, err)
	if err == nil && !s.Complete {
		err = fmt.Errorf("job %s: %s failed (listed above); fix the cause, then tablekit job requeue %s", s.ID, cliconn.Count(s.RangesFailed, "range", ""), ref)
	}
	js.OK = err == nil
	if err != nil {
		js.Error = tablekit.Redact(err.Error())
	}
	a.report(s, js)
	return err
}

// verifyJob compares a finished copy with its source, or a finished
// backup with its tables.
func (a *app) verifyJob(ctx context.Context, s *tablecopy.JobStatus, dacct *tablekit.Account) ([]tablecopy.TableCheck, error) {
	if s.Op == tablecopy.JobCopy {
		src, err := patterns.NewTable[entity.Entity](a.acct, s.Tables[0], nil)
		if err != nil {
			return nil, err
		}
		dst, err := patterns.NewTable[entity.Entity](dacct, s.ToTable, nil)
		if err != nil {
			return nil, err
		}
		filter, err := keys.ParseFilter(s.Filter)
		if err != nil {
			return nil, fmt.Errorf("job %s: its filter: %w", s.ID, err)
		}
		chk, err := tablecopy.Compare(ctx, src, dst, &tablecopy.VerifyOptions{Filter: filter, Parallel: a.whole.parallel})
		return []tablecopy.TableCheck{chk}, err
	}
	l, err := tablecopy.ParseLocation(s.Location, dacct)
	if err != nil {
		return nil, err
	}
	return tablecopy.VerifyBackup(ctx, l, &tablecopy.VerifyOptions{Account: a.acct, Parallel: a.whole.parallel})
}

func (a *app) cmdJobRequeue(ctx context.Context, args []string) error {
	s, dacct, err := a.readJob(ctx, args[0])
	if err != nil {
		return err
	}
	name := a.whole.queue
	if name == "" {
		name = s.Queue
	}
	q, err := consistency.NewQueue(a.acct, name, nil)
	if err != nil {
		return err
	}
	n, err := tablecopy.RequeueJob(ctx, args[0], dacct, q)
	if err != nil {
		return err
	}
	if a.json {
		return cliconn.JSONLine(a.stdout, jobRequeueSummary{Command: "job requeue", OK: true, Job: args[0], ID: s.ID, Queue: name, Sent: n})
	}
	fmt.Fprintf(a.stdout, "sent %s of job %s to %s\n", cliconn.Count(n, "range message", ""), s.ID, name)
	return nil
}

// jobRequeueSummary is what job requeue --json prints.
type jobRequeueSummary struct {
	Command string `json:"command"` // "job requeue"
	OK      bool   `json:"ok"`
	Job     string `json:"job"`
	ID      string `json:"id"`
	Queue   string `json:"queue"`
	Sent    int    `json:"sent"` // range messages sent
}
