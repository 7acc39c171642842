package emulator_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// knownDiff is a difference between Azurite's answer and the emulator's
// that is not a bug of the emulator: Azurite departs from Azure there,
// and the evidence says what Azure answers. The comparison consults the
// table for every fact that differs; an entry explains a fact only when
// the emulator answers as Azure does and Azurite as the entry says.
type knownDiff struct {
	name     string
	azurite  string // what Azurite answers
	azure    string // what Azure answers, and the emulator
	evidence string
	explains func(r *request, az, em *answer, d *fact) bool
}

// Evidence: recordings of real Azure Table storage kept by the Azure SDK
// for JavaScript (github.com/Azure/azure-sdk-for-js, under
// sdk/tables/data-tables/recordings/node/).
const (
	recListByPage = "azure-sdk-for-js recording tableclient_listentities/recording_should_list_by_page.js"
	recDouble     = "azure-sdk-for-js recording tableclient_createentity_getentity_and_delete/recording_should_createentity_with_double_number_in_scientific_notation.json"
	recDateTime   = "azure-sdk-for-js recording tableclient_createentity_getentity_and_delete/recording_should_createentity_with_datetime.json"
)

var knownDifferences = []knownDiff{
	{
		name:     "success Content-Type",
		azurite:  "application/json;odata=<format>",
		azure:    "application/json;odata=<format>;streaming=true;charset=utf-8",
		evidence: recListByPage + " (Content-Type of a 200 query page); " + recDouble + " (of a 200 point read)",
		explains: func(r *request, az, em *answer, d *fact) bool {
			return strings.HasSuffix(d.key, "header Content-Type") && d.azOK && d.emOK &&
				strings.HasPrefix(d.az, "application/json;odata=") && !strings.Contains(d.az, "streaming") &&
				d.em == d.az+";streaming=true;charset=utf-8"
		},
	},
	{
		name:     "continuation token format",
		azurite:  "x-ms-continuation-NextPartitionKey/NextRowKey: the key in base64",
		azure:    "1!<length of the base64>!<the key in base64, = written as ->",
		evidence: recListByPage + " (NextPartitionKey 1!24!bGlzdEVudGl0aWVzVGVzdA--, NextRowKey 1!4!MTM-)",
		explains: func(r *request, az, em *answer, d *fact) bool {
			if !strings.Contains(d.key, "x-ms-continuation-Next") || !d.azOK || !d.emOK {
				return false
			}
			return azureToken(d.em) == d.az
		},
	},
	{
		name:     "filter types compared loosely",
		azurite:  "compares a property with a literal of another EDM type by JavaScript's rules (5 gt '4' is true; an Int64 property equals its digits as a string)",
		azure:    "a comparison of a property with a literal of another type is false",
		evidence: `REST "Querying tables and entities": "The constant value must be of the same data type as the property in order for the filter to return valid results"; Azurite's QueryInterpreter/QueryNodes compare raw JSON values`,
		explains: func(r *request, az, em *answer, d *fact) bool {
			if r.filter == nil || !isPageFact(d.key) || az.facts["status"] != "200" || em.facts["status"] != "200" {
				return false
			}
			return mismatchOnly(r, az.rows, az.rowsKnown, em.rows, em.rowsKnown)
		},
	},
	{
		name:     "Int64 literal against a number",
		azurite:  "500 with an empty body when a filter compares an Int64 literal (5L) with a property held as a JSON number or boolean (BigNumberNode calls startsWith on it)",
		azure:    "200: the comparison is false, as for any literal of another type",
		evidence: `REST "Querying tables and entities" (same data type rule); Azurite's BigNumberNode.compare`,
		explains: func(r *request, az, em *answer, d *fact) bool {
			if r.filter == nil || az.facts["status"] != "500" || em.facts["status"] != "200" || !int64AgainstNumber(r.filter, r.data) {
				return false
			}
			return em.rowsKnown && slices.Equal(em.rows, expectedRows(r.filter, r.data, true))
		},
	},
	{
		name:     "keys over 512 characters",
		azurite:  "400 for a PartitionKey or RowKey over 512 characters",
		azure:    "accepted up to 1 KiB",
		evidence: "DESIGN.md fact 3 (keys: Azurite rejects over 512 chars; Azure's limit is 1 KiB)",
		explains: func(r *request, az, em *answer, d *fact) bool {
			return strings.Contains(r.label, "600-character") && az.facts["status"] == "400" &&
				(em.facts["status"] == "204" || em.facts["status"] == "201")
		},
	},
}

// expectedFailures are differences that are bugs of the emulator, known
// and reported: each names the bug so that it is removed when fixed
// (checkExplained fails once an entry explains nothing).
var expectedFailures = []knownDiff{}

// azureToken decodes Azure's continuation form 1!<n>!<base64 with - for
// => back to the plain base64 Azurite sends, or "" when tok is not in
// that form.
func azureToken(tok string) string {
	parts := strings.SplitN(tok, "!", 3)
	if len(parts) != 3 || parts[0] != "1" || fmt.Sprint(len(parts[2])) != parts[1] {
		return ""
	}
	b64 := strings.ReplaceAll(parts[2], "-", "=")
	if _, err := base64.StdEncoding.DecodeString(b64); err != nil {
		return ""
	}
	return b64
}

// isPageFact reports whether a fact is part of a query page's content:
// its rows, their count, its continuation.
func isPageFact(k string) bool {
	return strings.HasPrefix(k, "value") || strings.Contains(k, "x-ms-continuation-Next")
}

// expectedRows are the keys of the entities of data for which f holds
// by Azure's documented rules, in the service's order; with strict, an
// entity whose verdict is uncertain is left out.
func expectedRows(f *fnode, data []*gentity, strict bool) []string {
	var rows []string
	for _, e := range data {
		if v := f.eval(e); v.val && (v.known || !strict) {
			rows = append(rows, e.key())
		}
	}
	return rows
}

// mismatched reports whether f compares a property of some entity of
// data with a literal of another type.
func mismatched(f *fnode, data []*gentity) bool {
	for _, e := range data {
		if f.eval(e).mismatch {
			return true
		}
	}
	return false
}

// mismatchOnly reports whether the emulator's rows are the documented
// answer and Azurite's depart from it only on entities where the filter
// met a property of another type than its literal.
func mismatchOnly(r *request, azRows []string, azKnown bool, emRows []string, emKnown bool) bool {
	if !azKnown || !emKnown || r.data == nil {
		return false
	}
	in := func(rows []string, k string) bool { return slices.Contains(rows, k) }
	for _, e := range r.data {
		v := r.filter.eval(e)
		if v.known && in(emRows, e.key()) != v.val {
			return false // the emulator departs from the rules
		}
		if in(azRows, e.key()) != in(emRows, e.key()) && !v.mismatch {
			return false // Azurite departs where no type mismatch explains it
		}
	}
	return true
}

// int64AgainstNumber reports whether f compares an Int64 literal with a
// property some entity of data holds as a JSON number or boolean.
func int64AgainstNumber(f *fnode, data []*gentity) bool {
	switch f.op {
	case "and", "or":
		return int64AgainstNumber(f.l, data) || int64AgainstNumber(f.r, data)
	case "not":
		return int64AgainstNumber(f.l, data)
	}
	if f.lit.t != tInt64 {
		return false
	}
	for _, e := range data {
		if v, ok := e.prop(f.prop); ok {
			switch v.t {
			case tInt32, tBool:
				return true
			case tDouble:
				if !strings.HasPrefix(v.json, `"`) {
					return true
				}
			}
		}
	}
	return false
}

// knownMarkdown is the table of known differences as docs/EMULATOR.md
// shows it.
func knownMarkdown() string {
	var b strings.Builder
	b.WriteString("| difference | Azurite answers | Azure (and the emulator) answers | evidence |\n|---|---|---|---|\n")
	for _, k := range knownDifferences {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", k.name, k.azurite, k.azure, k.evidence)
	}
	return b.String()
}

// TestDiffKnownEntries checks the table itself: every entry has its two
// answers and its evidence, and names are unique.
func TestDiffKnownEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range append(slices.Clone(knownDifferences), expectedFailures...) {
		if k.name == "" || k.azurite == "" || k.azure == "" || k.evidence == "" || k.explains == nil {
			t.Errorf("entry %q: name, both answers, evidence and explains are all required", k.name)
		}
		if seen[k.name] {
			t.Errorf("entry %q: the name is used twice", k.name)
		}
		seen[k.name] = true
	}
	if testing.Verbose() {
		t.Logf("known differences:\n%s", knownMarkdown())
	}
}
