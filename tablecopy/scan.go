package tablecopy

import (
	"context"
	"sync"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// rows is a table of dynamic entities: every property with its EDM type,
// Tk* properties included (entity.Entity declares no properties, so
// patterns.NewTable has none to refuse).
type rows = patterns.Table[entity.Entity]

// scanSpec is one scan: the filter, the projection, parallelism and where
// to resume.
type scanSpec struct {
	filter   keys.Filter
	keysOnly bool
	parallel int
	resume   string
	progress func(patterns.ScanProgress)
}

// scan reads every entity of t matching spec.filter through t.Scan,
// calling fn with each page (concurrently across key ranges) and
// spec.progress after pages fn handled.
//
// Progress calls are made outside the engine's lock, so a call may carry
// an older token than one already made; scan drops those (Pages grows
// with every token), so each call's token covers every earlier one's.
func scan(ctx context.Context, t *rows, spec scanSpec, fn func(ctx context.Context, items []entity.Entity) error) error {
	qo := patterns.QueryOptions{SelectAll: true, AllowUnknownProperties: true}
	if spec.keysOnly {
		qo = patterns.QueryOptions{Select: []string{"PartitionKey", "RowKey"}, AllowUnknownProperties: true}
	}
	var mu sync.Mutex
	last := -1
	_, err := t.Scan(ctx, spec.filter, fn, &patterns.ScanOptions{
		QueryOptions: qo,
		Parallel:     spec.parallel,
		Resume:       spec.resume,
		Progress: func(p patterns.ScanProgress) {
			mu.Lock()
			defer mu.Unlock()
			if p.Pages <= last {
				return
			}
			last = p.Pages
			if spec.progress != nil {
				spec.progress(p)
			}
		},
	})
	return err
}
