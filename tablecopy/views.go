package tablecopy

import (
	"encoding/json"
	"maps"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
)

// A copy or a restore under another table name carries an entity's views
// that live in its own table (a patterns.Model's indexes in its partition
// and tails, its indexes in other partitions of the same table): they are
// rows of the table, copied with it. The list of views an entity carries
// (consistency.CopiesProperty) names them by table, so the copy's list is
// made to name the copy's table, and views in other tables, which the
// copy does not carry, are left out of it: left in, a move of the copied
// entity through the worker (Model.Archive, consistency.MoveEntity) would
// delete the source's views. The target's Model.Verify then reports those
// views missing, and its Repair writes them in the tables its Views name.

// retargetViews returns e with its views' list made to name to instead of
// from, without the views in other tables (changed is false, and e is
// returned as it is, when there is nothing to change), and whether it
// left any out. A list tablekit cannot read is left as it is.
func retargetViews(e entity.Entity, from, to string) (out entity.Entity, changed, elsewhere bool) {
	if from == "" || from == to {
		return e, false, false
	}
	v, ok := e.Properties[consistency.CopiesProperty]
	if !ok {
		return e, false, false
	}
	text, ok := v.Text()
	if !ok || text == "" {
		return e, false, false
	}
	var specs []consistency.CopySpec
	if json.Unmarshal([]byte(text), &specs) != nil {
		return e, false, false
	}
	kept := specs[:0]
	for _, s := range specs {
		if s.Table != from {
			elsewhere = true
			continue
		}
		s.Table = to
		kept = append(kept, s)
	}
	enc, err := consistency.EncodeCopies(kept...)
	if err != nil {
		return e, false, false
	}
	e.Properties = maps.Clone(e.Properties)
	e.Properties[consistency.CopiesProperty] = entity.String(enc)
	return e, true, elsewhere
}

// retargetAll applies retargetViews to items, in a new slice when any
// changes (the caller's pages stay as read), and returns how many had
// views in other tables left out.
func retargetAll(items []entity.Entity, from, to string) ([]entity.Entity, int64) {
	var out []entity.Entity
	var elsewhere int64
	for i, e := range items {
		r, changed, left := retargetViews(e, from, to)
		if left {
			elsewhere++
		}
		if !changed {
			continue
		}
		if out == nil {
			out = append([]entity.Entity(nil), items...)
		}
		out[i] = r
	}
	if out == nil {
		return items, elsewhere
	}
	return out, elsewhere
}
