package tables

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/entity"
)

// format is the JSON the client asked for: odata=nometadata,
// minimalmetadata (the default) or fullmetadata.
type format uint8

const (
	minimal format = iota
	noMetadata
	fullMetadata
)

func (f format) contentType() string {
	switch f {
	case noMetadata:
		return answer.TableContentType(answer.NoMetadata)
	case fullMetadata:
		return answer.TableContentType(answer.FullMetadata)
	}
	return answer.TableContentType(answer.MinimalMetadata)
}

// formatOf reads the format from a request's $format, else its Accept
// header (answer.TableFormat). A client asking for Atom (XML) only is
// refused: the emulator answers JSON.
func formatOf(query url.Values, header http.Header) (format, *answer.Error) {
	odata, atom := answer.TableFormat(query, header)
	if atom {
		return minimal, errAtom
	}
	switch odata {
	case answer.NoMetadata:
		return noMetadata, nil
	case answer.FullMetadata:
		return fullMetadata, nil
	}
	return minimal, nil
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	if plainJSON(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	if out, err := entity.String(s).AppendJSON(b); err == nil {
		return out
	}
	// Longer than a String may be (a link to a long key): encoding/json.
	j, _ := json.Marshal(s)
	return append(b, j...)
}

// entityLink is t(PartitionKey='pk',RowKey='rk'), each key URL-escaped
// with its quotes doubled, as odata.id and odata.editLink carry it.
func entityLink(t, pk, rk string) string {
	// A quote stays a quote, doubled: Azure's Location names
	// PartitionKey='a''''b' for the key a''b (azure-cosmos-table-python's
	// recorded test_operations_on_entity_with_partition_key_having_single_quote,
	// 2017, every header).
	esc := func(k string) string {
		return strings.ReplaceAll(url.PathEscape(strings.ReplaceAll(k, "'", "''")), "%27", "'")
	}
	return t + "(PartitionKey='" + esc(pk) + "',RowKey='" + esc(rk) + "')"
}

// appendRow appends r as the service writes an entity in format f: the
// odata annotations the format carries (fullmetadata: odata.type, id,
// etag, editLink; minimalmetadata: odata.etag), then PartitionKey,
// RowKey, Timestamp and the properties, each with the @odata.type
// annotation the format needs (Int64, DateTime, Guid and Binary in
// minimal and full metadata, Double only for NaN and ±Infinity, which
// travel as strings; Timestamp's in full metadata only). sel, when not
// nil, lists the properties to write ($select): one the entity lacks is
// written as null, as the service does.
func (s *Service) appendRow(b []byte, q *request, t string, r *row, sel []string, metadata string) []byte {
	b = append(b, '{')
	first := true
	comma := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	if metadata != "" {
		comma()
		b = append(b, `"odata.metadata":`...)
		b = appendQuoted(b, metadata)
	}
	if q.fmt == fullMetadata {
		comma()
		b = append(b, `"odata.type":`...)
		b = appendQuoted(b, s.cfg.Account+"."+t)
		b = append(b, `,"odata.id":`...)
		link := entityLink(t, r.pk, r.rk)
		b = appendQuoted(b, q.base+"/"+link)
		b = append(b, `,"odata.etag":`...)
		b = appendQuotedETag(b, r.ts)
		b = append(b, `,"odata.editLink":`...)
		b = appendQuoted(b, link)
	} else if q.fmt == minimal {
		comma()
		b = append(b, `"odata.etag":`...)
		b = appendQuotedETag(b, r.ts)
	}
	write := func(name string, v entity.Value, ok bool, system bool) {
		comma()
		if !ok {
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, `":null`...)
			return
		}
		if q.fmt != noMetadata && annotated(v, system, q.fmt) {
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, `@odata.type":"`...)
			b = append(b, v.Type...)
			b = append(b, `",`...)
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		if t, ok := v.V.(time.Time); ok && v.Type == entity.EdmDateTime {
			// The service's DateTime text (appendTime), where entity
			// writes all 7 digits.
			b = append(b, '"')
			b = appendTime(b, t, ":")
			b = append(b, '"')
			return
		}
		start := len(b)
		b, _ = v.AppendJSON(b)
		if v.Type == entity.EdmDouble && b[start] != '"' {
			// Azure writes a Double's exponent with a capital E
			// (1.23456789012346E+24: azure-sdk-for-js's recording
			// should_createentity_with_double_number_in_scientific_notation).
			for i := start; i < len(b); i++ {
				if b[i] == 'e' {
					b[i] = 'E'
				}
			}
		}
	}
	if sel != nil {
		for _, name := range sel {
			v, ok := r.get(name)
			write(name, v, ok, name == "Timestamp")
		}
		return append(b, '}')
	}
	comma()
	b = append(b, `"PartitionKey":`...)
	b = appendQuoted(b, r.pk)
	b = append(b, `,"RowKey":`...)
	b = appendQuoted(b, r.rk)
	if q.fmt == fullMetadata {
		b = append(b, `,"Timestamp@odata.type":"Edm.DateTime"`...)
	}
	b = append(b, `,"Timestamp":"`...)
	b = appendTime(b, time.Unix(0, r.ts), ":")
	b = append(b, '"')
	for _, p := range r.props {
		write(p.name, p.v, true, false)
	}
	return append(b, '}')
}

// appendQuotedETag appends ts's ETag as a JSON string (its quotes
// escaped).
func appendQuotedETag(b []byte, ts int64) []byte {
	b = append(b, `"W/\"datetime'`...)
	b = appendTime(b, time.Unix(0, ts), "%3A")
	return append(b, `'\""`...)
}

// annotated reports whether the service writes v's @odata.type in format
// f (minimal or full).
func annotated(v entity.Value, system bool, f format) bool {
	switch v.Type {
	case entity.EdmInt64, entity.EdmGuid, entity.EdmBinary:
		return true
	case entity.EdmDateTime:
		return !system || f == fullMetadata
	case entity.EdmDouble:
		x, _ := v.V.(float64)
		return math.IsNaN(x) || math.IsInf(x, 0)
	}
	return false
}

// parseSelect reads $select: property names separated by commas, blanks
// around them ignored. nil means every property.
func parseSelect(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" && n != "*" {
			out = append(out, n)
		}
	}
	return out
}

// plainJSON reports whether s is printable ASCII that JSON writes as is:
// no quote, backslash, nor the characters encoding/json escapes for HTML,
// as entity's writer does.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
