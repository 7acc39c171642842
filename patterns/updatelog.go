package patterns

import (
	"bytes"
	"encoding/json"
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
	return withStringProp(body, UpdateLogProperty, strings.Join(log, " "))
}

// withStringProp appends a String property to an entity's JSON object (the
// codec's output, which never has the property already).
func withStringProp(body []byte, name, value string) []byte {
	out := make([]byte, 0, len(body)+len(name)+len(value)+8)
	out = append(out, body[:bytes.LastIndexByte(body, '}')]...)
	out = append(out, ',')
	out = appendJSONString(out, name)
	out = append(out, ':')
	out = appendJSONString(out, value)
	return append(out, '}')
}

// appendJSONString appends s as a JSON string (strconv.Quote's escapes,
// such as \x1f, are not all JSON).
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}
