package patterns

import (
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// ReservedPrefix starts every property tablekit adds to an entity: the
// write-id log (TkUpdates), a wide entity's chunk count (TkChunks), and the
// index patterns' properties below. NewTable (and every repository built
// on it) refuses a type with a property that starts with it.
const ReservedPrefix = "Tk"

// Properties tablekit adds to the entities of the index patterns. They are
// C# identifiers, so Azure accepts them, and start with ReservedPrefix.
const (
	// PropPrimaryPartitionKey holds, on an inter-partition index copy, the
	// PartitionKey of the entity it copies. Every primary entity of an
	// EventualIndexedTable or a Model with EventualIndexes carries its
	// own, which the worker copies onto each copy with the other
	// properties.
	PropPrimaryPartitionKey = consistency.PrimaryPartitionKeyProperty
	// PropPrimaryRowKey holds, on an index copy, the RowKey of the entity
	// it copies, so a lookup returns the primary's keys. Every primary
	// entity of an EventualIndexedTable carries its own, as with
	// PropPrimaryPartitionKey.
	PropPrimaryRowKey = consistency.PrimaryRowKeyProperty
	// PropCopies holds, on a primary entity of an EventualIndexedTable,
	// the JSON list of the copies it should have (consistency.CopySpec):
	// the worker's sync-copies step reads it, so the worker binary needs
	// none of the application's code.
	PropCopies = consistency.CopiesProperty
	// PropIntent holds, on a primary entity of an EventualIndexedTable,
	// the id of the write that last changed it. The write's sync-copies
	// step expects it, so a worker that runs before the write has landed
	// waits instead of syncing the copies to the old state.
	PropIntent = consistency.IntentProperty
)

// MaxListUnits is the most UTF-16 code units a String property may hold
// (azrules.MaxStringUnits), and so the largest JSON member list an index
// entity can store.
const MaxListUnits = azrules.MaxStringUnits

// rawProps is an entity as the index patterns handle it between reading a
// row and writing a copy: its properties, with their exact EDM types, and
// PartitionKey, RowKey (Strings), odata.etag (a String) and Timestamp (a
// DateTime) under their wire names. It is decoded and encoded by the entity
// layer (entity.Entity), which keeps every annotation and checks Azure's
// limits on every body it writes.
type rawProps map[string]entity.Value

// propETag is the wire name of an entity's ETag.
const propETag = "odata.etag"

func parseProps(body []byte) (rawProps, error) {
	var e entity.Entity
	if err := e.UnmarshalJSON(body); err != nil {
		return nil, err
	}
	p := make(rawProps, len(e.Properties)+4)
	for k, v := range e.Properties {
		p[k] = v
	}
	p["PartitionKey"] = entity.String(e.PartitionKey)
	p["RowKey"] = entity.String(e.RowKey)
	if e.ETag != "" {
		p[propETag] = entity.String(e.ETag)
	}
	if !e.Timestamp.IsZero() {
		p["Timestamp"] = entity.DateTime(e.Timestamp)
	}
	return p, nil
}

func (p rawProps) setString(name, v string) { p[name] = entity.String(v) }

// str returns the text of a property carried as a JSON string
// (entity.Value.Text): a String, and also an Int64, DateTime, Guid or
// Binary as their wire text.
func (p rawProps) str(name string) (string, bool) {
	v, ok := p[name]
	if !ok {
		return "", false
	}
	return v.Text()
}

// project returns a copy of p under other keys, keeping only the named
// properties (all when names is nil), without the source's ETag and
// Timestamp.
func (p rawProps) project(pk, rk string, names []string) rawProps {
	out := make(rawProps, len(p)+2)
	if names == nil {
		for k, v := range p {
			if k != propETag && k != "Timestamp" {
				out[k] = v
			}
		}
	} else {
		for _, n := range names {
			if v, ok := p[n]; ok {
				out[n] = v
			}
		}
	}
	out.setString("PartitionKey", pk)
	out.setString("RowKey", rk)
	return out
}

// entity returns p as the entity layer's Entity.
func (p rawProps) entity() entity.Entity {
	e := entity.Entity{Properties: make(map[string]entity.Value, len(p))}
	for k, v := range p {
		switch k {
		case "PartitionKey":
			e.PartitionKey, _ = v.V.(string)
		case "RowKey":
			e.RowKey, _ = v.V.(string)
		case propETag:
			e.ETag, _ = v.V.(string)
		case "Timestamp":
			e.Timestamp, _ = v.V.(time.Time)
		default:
			e.Properties[k] = v
		}
	}
	return e
}

// bytes encodes p with entity.Entity.MarshalJSON: the error wraps
// tablekit.ErrInvalidEntity when p breaks one of Azure's limits (a copy
// with the properties the pattern adds may pass 252 properties or 1 MiB).
func (p rawProps) bytes() ([]byte, error) { return p.entity().MarshalJSON() }

// asPrimary rewrites a row read from an index copy so that it decodes as
// the primary entity: the primary's keys replace the copy's, and the
// copy's ETag is dropped (it is not the primary's; write through the
// repository's Update, which reads the primary).
func asPrimary(row []byte) ([]byte, error) {
	p, err := parseProps(row)
	if err != nil {
		return nil, err
	}
	if rk, ok := p.str(PropPrimaryRowKey); ok {
		p.setString("RowKey", rk)
	}
	if pk, ok := p.str(PropPrimaryPartitionKey); ok {
		p.setString("PartitionKey", pk)
	}
	delete(p, propETag)
	return p.bytes()
}

// checkHiddenProps refuses a struct that has a property tablekit adds.
func checkHiddenProps(what string, props []string, hidden ...string) error {
	for _, p := range props {
		for _, h := range hidden {
			if p == h {
				return tkerr.Errorf("tablekit: %s: %w: the struct has a property named %s, which the pattern reserves", what, tablekit.ErrInvalidEntity, h)
			}
		}
	}
	return nil
}

// validIndexName reports whether name can prefix keys unambiguously:
// ASCII letters and digits only (no separator).
func validIndexName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
