package answer

import (
	"net/url"

	"github.com/tablekit/tablekit/keys"
)

// KeyRange is the key range of a table SAS (spk, srk, epk, erk),
// inclusive, compared as the service orders keys: by PartitionKey, then
// RowKey, in UTF-16 code units (keys.Compare). A start or end RowKey
// applies only within its PartitionKey; an empty one is no bound.
type KeyRange struct {
	StartPK, StartRK, EndPK, EndRK string
	// HasStart and HasEnd say whether spk and epk were given.
	HasStart, HasEnd bool
}

// KeyRangeOf reads the key range of a SAS's query parameters. It returns
// nil when q is no SAS (no sig) or its SAS has no range.
func KeyRangeOf(q url.Values) *KeyRange {
	if q.Get("sig") == "" {
		return nil
	}
	r := &KeyRange{StartPK: q.Get("spk"), StartRK: q.Get("srk"), EndPK: q.Get("epk"), EndRK: q.Get("erk")}
	r.HasStart, r.HasEnd = q.Has("spk"), q.Has("epk")
	if !r.HasStart && !r.HasEnd {
		return nil
	}
	return r
}

// Contains reports whether the entity (pk, rk) is inside the range.
func (r *KeyRange) Contains(pk, rk string) bool {
	if r.HasStart {
		if c := keys.Compare(pk, r.StartPK); c < 0 || c == 0 && r.StartRK != "" && keys.Compare(rk, r.StartRK) < 0 {
			return false
		}
	}
	if r.HasEnd {
		if c := keys.Compare(pk, r.EndPK); c > 0 || c == 0 && r.EndRK != "" && keys.Compare(rk, r.EndRK) > 0 {
			return false
		}
	}
	return true
}

// Filter is the range as a filter, which Azure ands to a query under the
// SAS so that it returns only the range. A range without bounds is the
// zero Filter.
func (r *KeyRange) Filter() keys.Filter {
	var parts []keys.Filter
	if r.HasStart {
		if r.StartRK != "" {
			parts = append(parts, keys.Or(keys.PK().Gt(r.StartPK), keys.And(keys.PK().Eq(r.StartPK), keys.RK().Ge(r.StartRK))))
		} else {
			parts = append(parts, keys.PK().Ge(r.StartPK))
		}
	}
	if r.HasEnd {
		if r.EndRK != "" {
			parts = append(parts, keys.Or(keys.PK().Lt(r.EndPK), keys.And(keys.PK().Eq(r.EndPK), keys.RK().Le(r.EndRK))))
		} else {
			parts = append(parts, keys.PK().Le(r.EndPK))
		}
	}
	return keys.And(parts...)
}
