package wire

// Write markers on tablekit's own entities. A conditional write (an
// insert, or a replace or merge conditional on one ETag) whose answer is
// lost cannot be settled by its content alone: another writer may have
// stored the same content (two writers incrementing a counter from the
// same value both write the same next value), and reporting the refused
// write as applied counts that change twice. A caller's entity is stored
// as the caller wrote it, so its write is settled by the stored state and
// the service's timestamps alone (see Table.Write). But an entity tablekit
// owns (Op.Owned: an index copy written in the transaction of its
// primary) may carry a record: Write and Batch put a random id in its
// write-id log (UpdateLogProperty), after the anchor of the state it was
// conditional on, exactly as Modify does: a read-back that holds the id
// proves the write landed, and one that holds the anchor followed by
// another id proves it did not. A transaction is all or nothing, so one
// marked operation settles all of its operations.
//
// An entity with no room for one more property (252 properties, or close
// to the 1 MiB limit) is written unmarked; a lost answer on it is settled
// by content only when the write's effect does not depend on who wrote it
// (unconditional writes, Op.Unique), and is otherwise reported with
// tablekit.ErrOutcomeUnknown.

import (
	"bytes"
	"slices"

	"github.com/tablekit/tablekit/entity"
)

// markerRoomBytes is the body size under which an entity surely has room
// for the marker: even if every byte were a string character counted twice
// by the service, it stays far under the 1 MiB entity limit.
const markerRoomBytes = 256 << 10

// markable reports whether op is a write the marker settles: an insert, or
// a replace or merge conditional on one ETag, of an entity tablekit owns,
// that the caller did not make unique itself.
func markable(op Op) bool {
	return op.Owned && !op.Unique && op.Type != OpDelete && op.conditional()
}

// mark records a fresh write id in op's entity (after the anchor of the
// state op is conditional on) and returns the marked op and the id. When
// the entity has no room for the log property, op is returned unmarked
// with an empty id.
func mark(op Op) (Op, string) {
	if !markable(op) || !hasRoom(op.Entity) {
		return op, ""
	}
	id := RandomID()[:16]
	log := id
	if op.Type != OpInsert {
		log = anchorOf(nil, op.ETag) + " " + id
	}
	body, err := WithProp(op.Entity, UpdateLogProperty, log)
	if err != nil {
		return op, ""
	}
	op.Entity = body
	return op, id
}

// markBatch marks the first operation of a transaction that the marker
// settles (see mark) and returns the operations (a copy when one is
// marked), the marked one's index (-1: none) and its id.
func markBatch(ops []Op) ([]Op, int, string) {
	for i, op := range ops {
		if !markable(op) {
			continue
		}
		m, id := mark(op)
		if id == "" {
			continue
		}
		ops = slices.Clone(ops)
		ops[i] = m
		return ops, i, id
	}
	return ops, -1, ""
}

// hasRoom reports whether an entity's JSON can take the log property
// within Azure's limits (252 custom properties, 1 MiB).
func hasRoom(body []byte) bool {
	if len(body) < markerRoomBytes && topLevelMembers(body) < 250 {
		return true // fewer members than properties allowed, however many are annotations
	}
	var e entity.Entity
	if e.UnmarshalJSON(body) != nil {
		return false
	}
	if e.Properties == nil {
		e.Properties = map[string]entity.Value{}
	}
	if _, ok := e.Properties[UpdateLogProperty]; !ok {
		e.Properties[UpdateLogProperty] = entity.String(RandomID() + RandomID())
	}
	return e.Validate() == nil
}

// topLevelMembers counts the members of a JSON object (properties and
// their annotations), without decoding it.
func topLevelMembers(b []byte) int {
	n, depth, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ':' && depth == 1:
			n++
		}
	}
	return n
}

// markVerdict settles a marked write from its entity read back (nil when
// absent): yes when the log holds id; no when it holds the anchor of the
// state the write was conditional on without id (another write consumed
// that state); unknown otherwise (the entity was written again since, by a
// write that kept no log).
func markVerdict(op Op, id string, stored []byte) verdict {
	if stored == nil || !bytes.Contains(stored, []byte(UpdateLogProperty)) {
		return unknown
	}
	log := ReadLog(stored)
	if slices.Contains(log, id) {
		return yes
	}
	if op.Type != OpInsert && slices.Contains(log, anchorOf(nil, op.ETag)) {
		return no
	}
	return unknown
}

// etagIfLast returns etag when id is the last entry of stored's log (the
// entity is still the version the write made), else "": later writes
// followed, and the caller's version is not the stored one.
func etagIfLast(id string, stored []byte, etag string) string {
	if log := ReadLog(stored); len(log) > 0 && log[len(log)-1] == id {
		return etag
	}
	return ""
}
