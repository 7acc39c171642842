package patterns

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/tablekit/tablekit"
)

// Properties tablekit adds to the entities of the index patterns. They are
// C# identifiers, so Azure accepts them, and start with "Tk" so they are
// unlikely to clash with a struct's own properties (NewIndexedTable and
// friends refuse a type that has one).
const (
	// PropPrimaryPartitionKey holds, on an inter-partition index copy, the
	// PartitionKey of the entity it copies.
	PropPrimaryPartitionKey = "TkPrimaryPK"
	// PropPrimaryRowKey holds, on an index copy, the RowKey of the entity
	// it copies, so a lookup returns the primary's keys.
	PropPrimaryRowKey = "TkPrimaryRK"
	// PropCopies holds, on a primary entity of an EventualIndexedTable,
	// the JSON list of the copies it should have (consistency.CopySpec):
	// the worker's sync-copies step reads it, so the worker binary needs
	// none of the application's code.
	PropCopies = "TkCopies"
	// PropIntent holds, on a primary entity of an EventualIndexedTable,
	// the id of the write that last changed it. The write's sync-copies
	// step expects it, so a worker that runs before the write has landed
	// waits instead of syncing the copies to the old state.
	PropIntent = "TkIntent"
)

// MaxListUnits is the most UTF-16 code units a String property may hold,
// and so the largest JSON member list an index entity can store.
const MaxListUnits = 32 * 1024

// rawProps is an entity in the service's JSON form: property names (and
// their "@odata.type" annotations) to raw values.
type rawProps map[string]json.RawMessage

func parseProps(body []byte) (rawProps, error) {
	var p rawProps
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	return p, nil
}

func (p rawProps) setString(name, v string) {
	b, _ := json.Marshal(v) // a string always encodes
	p[name] = b
}

func (p rawProps) str(name string) (string, bool) {
	v, ok := p[name]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// project returns a copy of p under other keys, keeping only the named
// properties (all when names is nil) and their annotations.
func (p rawProps) project(pk, rk string, names []string) rawProps {
	out := make(rawProps, len(p)+2)
	if names == nil {
		for k, v := range p {
			if !strings.HasPrefix(k, "odata.") {
				out[k] = v
			}
		}
	} else {
		for _, n := range names {
			if v, ok := p[n]; ok {
				out[n] = v
			}
			if v, ok := p[n+"@odata.type"]; ok {
				out[n+"@odata.type"] = v
			}
		}
	}
	out.setString("PartitionKey", pk)
	out.setString("RowKey", rk)
	return out
}

func (p rawProps) bytes() []byte {
	b, _ := json.Marshal(p) // raw messages that came from valid JSON
	return b
}

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
	delete(p, "odata.etag")
	return p.bytes(), nil
}

// utf16Len is the length of s in UTF-16 code units, the unit of the
// service's string limit.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// checkHiddenProps refuses a struct that has a property tablekit adds.
func checkHiddenProps(what string, props []string, hidden ...string) error {
	for _, p := range props {
		for _, h := range hidden {
			if p == h {
				return fmt.Errorf("tablekit: %s: %w: the struct has a property named %s, which the pattern reserves", what, tablekit.ErrInvalidEntity, h)
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
