package cliconn

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tablekit/tablekit/consistency"
)

// StringList is a repeatable, comma-separated flag.
type StringList []string

// String returns the values joined by commas.
func (s *StringList) String() string { return strings.Join(*s, ",") }

// Set adds the comma-separated values of v, trimmed, skipping empty ones.
func (s *StringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

// PoisonList is "poison list" of tablekit and tablekit-worker: it shows a
// queue's poisoned messages and their errors.
type PoisonList struct {
	Max  int  // most records to show (the service peeks at most 32)
	JSON bool // one JSON line per record
}

// Register adds --max and --json to fs.
func (p *PoisonList) Register(fs *flag.FlagSet) {
	fs.IntVar(&p.Max, "max", 32, "most records to show (the service peeks at most 32)")
	fs.BoolVar(&p.JSON, "json", false, `print each record as a JSON object a line: {"poisonMessageId","v","queue","messageId","txId","dequeueCount","step","kind","error","permanent","at","message","messageBlob"}`)
}

// Run writes q's poisoned messages to w: one tab-separated line each and a
// count, or one JSON line each.
func (p *PoisonList) Run(ctx context.Context, q *consistency.Queue, w io.Writer) error {
	recs, err := q.Poisoned(ctx, p.Max, nil)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if p.JSON {
			if err := JSONLine(w, struct {
				PoisonMessageID string `json:"poisonMessageId"`
				consistency.PoisonRecord
			}{r.PoisonMessageID, r}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "%s\ttx=%s\tmessage=%s\tdequeued=%d\tstep=%d\tkind=%s\tpermanent=%t\tat=%s\terror=%s\n",
			r.PoisonMessageID, r.TxID, r.MessageID, r.DequeueCount, r.Step, r.Kind, r.Permanent, r.At.Format(time.RFC3339), r.Error)
	}
	if !p.JSON {
		fmt.Fprintf(w, "%s shown\n", Count(len(recs), "poisoned message", ""))
	}
	return nil
}

// PoisonRequeue is "poison requeue" of tablekit and tablekit-worker: it
// moves poisoned messages back to their queue.
type PoisonRequeue struct {
	Max  int        // most messages to requeue; 0 means all
	IDs  StringList // requeue only these (poison message, message or transaction ids)
	JSON bool       // print the summary as one JSON line
}

// Register adds --max, --id and --json to fs.
func (p *PoisonRequeue) Register(fs *flag.FlagSet) {
	fs.IntVar(&p.Max, "max", 0, "most messages to requeue; 0 means all")
	fs.Var(&p.IDs, "id", "requeue only this poison message id, original message id or transaction id; repeatable")
	fs.BoolVar(&p.JSON, "json", false, `print the summary as one JSON object: {"command":"poison requeue","ok","queue","requeued","error"}`)
}

// RequeueSummary is what "poison requeue --json" prints.
type RequeueSummary struct {
	Command  string `json:"command"` // "poison requeue"
	OK       bool   `json:"ok"`
	Queue    string `json:"queue"`
	Requeued int    `json:"requeued"` // messages moved back, also when an error stopped the rest
	Error    string `json:"error,omitempty"`
}

// Run requeues q's poisoned messages and writes how many moved to w.
func (p *PoisonRequeue) Run(ctx context.Context, q *consistency.Queue, w io.Writer) error {
	n, err := q.Requeue(ctx, &consistency.RequeueOptions{MessageIDs: p.IDs, Max: p.Max})
	if p.JSON {
		s := RequeueSummary{Command: "poison requeue", OK: err == nil, Queue: q.Name(), Requeued: n}
		if err != nil {
			s.Error = err.Error()
		}
		if jerr := JSONLine(w, s); err == nil {
			err = jerr
		}
		return err
	}
	fmt.Fprintf(w, "%s requeued to %s\n", Count(n, "message", ""), q.Name())
	return err
}
