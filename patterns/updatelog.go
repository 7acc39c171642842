package patterns

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/entity"
)

// UpdateLogProperty is the property in which Table.Update records the ids
// of the last updates of an entity (space-separated), so that a retried
// write can tell whether its first attempt landed.
const UpdateLogProperty = "TablekitUpdates"

const updateLogLen = 8

// updateLog returns the ids recorded in an entity's JSON, oldest first.
func updateLog(raw []byte) []string {
	if raw == nil || !bytes.Contains(raw, []byte(UpdateLogProperty)) {
		return nil
	}
	var e entity.Entity
	if e.UnmarshalJSON(raw) != nil {
		return nil
	}
	v, ok := e.Properties[UpdateLogProperty]
	if !ok {
		return nil
	}
	s, _ := v.V.(string)
	return strings.Fields(s)
}

// withUpdateLog appends the log property, with id added, to an entity's
// JSON object.
func withUpdateLog(body []byte, log []string, id string) []byte {
	log = append(log, id)
	if len(log) > updateLogLen {
		log = log[len(log)-updateLogLen:]
	}
	out := make([]byte, 0, len(body)+len(UpdateLogProperty)+len(log)*17+8)
	out = append(out, body[:bytes.LastIndexByte(body, '}')]...)
	out = append(out, ',')
	out = strconv.AppendQuote(out, UpdateLogProperty)
	out = append(out, ':')
	out = strconv.AppendQuote(out, strings.Join(log, " "))
	return append(out, '}')
}
