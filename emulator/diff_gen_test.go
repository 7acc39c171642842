package emulator_test

// The generator of the differential tests: entities of every EDM type
// with edge values, keys, filters (as trees, rendered as OData text) and
// the typed evaluation of a filter that some known differences consult.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// edm is an Entity Data Model type of the Table service.
type edm uint8

const (
	tString edm = iota
	tInt32
	tInt64
	tDouble
	tBool
	tDateTime
	tGuid
	tBinary
	numEDM
)

var edmNames = [...]string{"Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime", "Edm.Guid", "Edm.Binary"}

// gval is a generated property value, with the JSON text it is sent as.
type gval struct {
	t     edm
	s     string  // String, Guid
	i     int64   // Int32, Int64
	f     float64 // Double
	b     bool
	bin   []byte
	ticks int64  // DateTime: 100 ns units since 0001-01-01T00:00:00Z
	json  string // the value's JSON text as sent
	// annotate sends the @odata.type annotation for a type that does
	// not need one (String, Int32, Boolean, a finite Double's does).
	annotate bool
}

// gentity is a generated entity: keys and properties in order.
type gentity struct {
	pk, rk string
	props  []gprop
}

type gprop struct {
	name string
	v    gval
}

func (e *gentity) key() string { return e.pk + "\x00" + e.rk }

func (e *gentity) prop(name string) (gval, bool) {
	switch name {
	case "PartitionKey":
		return strVal(e.pk), true
	case "RowKey":
		return strVal(e.rk), true
	}
	for _, p := range e.props {
		if p.name == name {
			return p.v, true
		}
	}
	return gval{}, false
}

// body is the entity's JSON, members in order, as a client sends it.
func (e *gentity) body() []byte {
	var b bytes.Buffer
	b.WriteString(`{"PartitionKey":` + jsonString(e.pk) + `,"RowKey":` + jsonString(e.rk))
	for _, p := range e.props {
		writeProp(&b, p)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// propsBody is the JSON of the properties alone (an update's body may
// leave the keys out).
func propsBody(props []gprop) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range props {
		if i == 0 {
			b.WriteString(jsonString(p.name) + ":" + p.v.json)
			if ann := p.v.annotation(); ann != "" {
				b.WriteString("," + jsonString(p.name+"@odata.type") + ":" + jsonString(ann))
			}
			continue
		}
		writeProp(&b, p)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeProp(b *bytes.Buffer, p gprop) {
	if ann := p.v.annotation(); ann != "" {
		b.WriteString("," + jsonString(p.name+"@odata.type") + ":" + jsonString(ann))
	}
	b.WriteString("," + jsonString(p.name) + ":" + p.v.json)
}

func (v gval) annotation() string {
	switch v.t {
	case tInt64, tDateTime, tGuid, tBinary:
		return edmNames[v.t]
	case tDouble:
		if v.annotate || math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return edmNames[v.t]
		}
	default:
		if v.annotate {
			return edmNames[v.t]
		}
	}
	return ""
}

// jsonString is s as a JSON string, with no HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonASCII is s as a JSON string in ASCII: every other character as
// \uXXXX escapes of its UTF-16 code units (surrogate pairs for those
// outside the BMP). Large bodies are sent so: Azurite decodes a request
// body chunk by chunk (readRequestIntoText joins the Buffers as
// strings), so a UTF-8 sequence split between two chunks becomes U+FFFD.
func jsonASCII(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, u := range utf16.Encode([]rune(s)) {
		switch {
		case u == '"' || u == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(u))
		case u < 0x20 || u > 0x7e:
			fmt.Fprintf(&b, "\\u%04x", u)
		default:
			b.WriteByte(byte(u))
		}
	}
	b.WriteByte('"')
	return b.String()
}

func strVal(s string) gval { return gval{t: tString, s: s, json: jsonString(s)} }

// gen is the seeded generator of one case.
type gen struct {
	r *rand.Rand
}

func newGen(seed uint64, stream string) *gen {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(stream); i++ {
		h = (h ^ uint64(stream[i])) * 1099511628211
	}
	return &gen{r: rand.New(rand.NewPCG(seed, h))}
}

func (g *gen) pick(n int) int { return g.r.IntN(n) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// runes the strings are made of: ASCII, characters that need escaping in
// JSON, URLs and filters, Latin-1, CJK, and characters outside the BMP
// (surrogate pairs in UTF-16).
var strRunes = []rune("abcxyzABCXYZ0189 _-.~'\"\\%+&=:;,!@$()[]{}<>*\t\né\u00f1\u00fc\u00df\u4e2d\u6587\u03a9\U0001F600\U0001F4A9\U00010348\u200b\ufeff")

// keyRunes are what a key may hold: no / \ # ? and no control characters.
var keyRunes = []rune("abcxyzABCXYZ0189 _-.~'%+&=:;,!@$()é\u00f1\u4e2d\U0001F600")

func (g *gen) str(max int) string {
	n := g.pick(max + 1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(strRunes[g.pick(len(strRunes))])
	}
	return b.String()
}

func (g *gen) key(max int) string {
	n := g.pick(max + 1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(keyRunes[g.pick(len(keyRunes))])
	}
	return b.String()
}

// utf16Len is the length of s in UTF-16 code units, the unit of the
// service's string limit.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// The edges of each type.
var (
	int32Edges  = []int64{0, 1, -1, math.MaxInt32, math.MinInt32, 42, -42}
	int64Edges  = []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 53, 1<<53 + 1, math.MaxInt32 + 1, 42}
	doubleEdges = []string{"0.0", "-0.0", "3.0", "1.5", "-2.25", "0.1", "1e-300", "5e-324", "2.2250738585072014e-308", "1.7976931348623157e+308", "123456789012345680000", "1.23456789012346e+24", "42.0", "-1.0e10"}
	timeEdges   = []string{
		"1601-01-01T00:00:00.0000000Z", "1601-01-01T00:00:00.0000001Z", "9999-12-31T23:59:59.9999999Z",
		"1970-01-01T00:00:00.0000000Z", "2020-02-29T12:34:56.1234567Z", "2024-06-01T00:00:00.0000001Z",
		"2000-01-01T00:00:00Z", "2021-03-04T05:06:07.89Z",
	}
	guidEdges = []string{"00000000-0000-0000-0000-000000000000", "c9da6455-213d-42c9-9a79-3e9149a57833", "ffffffff-ffff-ffff-ffff-ffffffffffff", "0f8fad5b-d9cb-469f-a165-70867728950e"}
)

// value generates a value of type t: an edge, or a random one.
func (g *gen) value(t edm) gval {
	v := gval{t: t}
	switch t {
	case tString:
		v = strVal(g.str(12))
		v.annotate = g.chance(0.2)
	case tInt32:
		if g.chance(0.5) {
			v.i = int32Edges[g.pick(len(int32Edges))]
		} else {
			v.i = int64(g.r.Int32N(2000) - 1000)
		}
		v.json = strconv.FormatInt(v.i, 10)
		v.annotate = g.chance(0.2)
	case tInt64:
		if g.chance(0.5) {
			v.i = int64Edges[g.pick(len(int64Edges))]
		} else {
			v.i = g.r.Int64N(1<<40) - 1<<39
		}
		v.json = jsonString(strconv.FormatInt(v.i, 10))
	case tDouble:
		switch k := g.pick(10); {
		case k == 0:
			v.f, v.json = math.NaN(), `"NaN"`
		case k == 1:
			v.f, v.json = math.Inf(1), `"Infinity"`
		case k == 2:
			v.f, v.json = math.Inf(-1), `"-Infinity"`
		case k < 7:
			v.json = doubleEdges[g.pick(len(doubleEdges))]
			v.f, _ = strconv.ParseFloat(v.json, 64)
		default:
			v.f = float64(g.r.IntN(20000)-10000) / 8
			v.json = strconv.FormatFloat(v.f, 'f', -1, 64)
			if !strings.Contains(v.json, ".") {
				v.json += ".0"
			}
		}
		v.annotate = true
	case tBool:
		v.b = g.chance(0.5)
		v.json = strconv.FormatBool(v.b)
		v.annotate = g.chance(0.2)
	case tDateTime:
		var text string
		if g.chance(0.5) {
			text = timeEdges[g.pick(len(timeEdges))]
		} else {
			tt := time.Date(1990+g.pick(40), time.Month(1+g.pick(12)), 1+g.pick(28), g.pick(24), g.pick(60), g.pick(60), g.pick(10_000_000)*100, time.UTC)
			text = tt.Format("2006-01-02T15:04:05.0000000Z")
		}
		tt, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			panic(err) // the edges above are well formed
		}
		v.ticks = ticksOf(tt)
		v.s = text
		v.json = jsonString(text)
	case tGuid:
		if g.chance(0.5) {
			v.s = guidEdges[g.pick(len(guidEdges))]
		} else {
			var b [16]byte
			for i := range b {
				b[i] = byte(g.pick(256))
			}
			h := hex.EncodeToString(b[:])
			v.s = h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
		}
		v.json = jsonString(v.s)
	case tBinary:
		n := []int{0, 1, 3, 16, 100}[g.pick(5)]
		v.bin = make([]byte, n)
		for i := range v.bin {
			v.bin[i] = byte(g.pick(256))
		}
		v.json = jsonString(base64.StdEncoding.EncodeToString(v.bin))
	}
	return v
}

// ticksOf is t in 100 ns units since 0001-01-01T00:00:00Z.
func ticksOf(t time.Time) int64 {
	const unixTicks = 621355968000000000 // 1970-01-01 in .NET ticks
	return unixTicks + t.Unix()*10_000_000 + int64(t.Nanosecond()/100)
}

// schema is the properties entities of a case draw from: a name and its
// usual type (entities sometimes give a name another type).
type schemaProp struct {
	name string
	t    edm
}

var filterSchema = []schemaProp{
	{"S", tString}, {"S2", tString}, {"I", tInt32}, {"L", tInt64}, {"D", tDouble},
	{"B", tBool}, {"T", tDateTime}, {"G", tGuid}, {"X", tBinary}, {"N", tInt32},
}

// entity generates an entity with keys from pks and rk, and properties of
// the schema: each present with probability 0.8, of its usual type with
// probability 0.9.
func (g *gen) entity(pk, rk string, schema []schemaProp) *gentity {
	e := &gentity{pk: pk, rk: rk}
	for _, sp := range schema {
		if !g.chance(0.8) {
			continue
		}
		t := sp.t
		if g.chance(0.1) {
			t = edm(g.pick(int(numEDM)))
		}
		e.props = append(e.props, gprop{sp.name, g.value(t)})
	}
	return e
}

// entityPath is the address of an entity, escaped.
func entityPath(pk, rk string) string {
	return "/T(PartitionKey='" + escapeKey(pk) + "',RowKey='" + escapeKey(rk) + "')"
}

func escapeKey(k string) string {
	return url.PathEscape(strings.ReplaceAll(k, "'", "''"))
}

// fnode is a filter as a tree.
type fnode struct {
	// op is "and", "or", "not", a comparison (eq ne gt ge lt le),
	// "bare" (the property alone) or "const" (lit, a Boolean, alone).
	op   string
	l, r *fnode
	prop string
	lit  gval
	// litText overrides the literal's rendering (mismatched literal
	// forms, such as an Int32 literal written with L).
	litText  string
	reversed bool // literal op prop
	parens   bool // extra parentheses around this node
}

var cmpOps = []string{"eq", "ne", "gt", "ge", "lt", "le"}

func (n *fnode) String() string {
	var s string
	switch n.op {
	case "and", "or":
		s = n.l.child() + " " + n.op + " " + n.r.child()
	case "not":
		s = "not (" + n.l.String() + ")"
	case "bare":
		s = n.prop
	case "const":
		s = literal(n.lit)
	default:
		lit := n.litText
		if lit == "" {
			lit = literal(n.lit)
		}
		if n.reversed {
			s = lit + " " + n.op + " " + n.prop
		} else {
			s = n.prop + " " + n.op + " " + lit
		}
	}
	if n.parens {
		s = "(" + s + ")"
	}
	return s
}

// child renders a node as the operand of and/or: parenthesized when it
// is itself and/or.
func (n *fnode) child() string {
	if (n.op == "and" || n.op == "or") && !n.parens {
		return "(" + n.String() + ")"
	}
	return n.String()
}

// literal is v as an OData literal of its type.
func literal(v gval) string {
	switch v.t {
	case tString:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	case tInt32:
		return strconv.FormatInt(v.i, 10)
	case tInt64:
		return strconv.FormatInt(v.i, 10) + "L"
	case tDouble:
		s := strconv.FormatFloat(v.f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	case tBool:
		return strconv.FormatBool(v.b)
	case tDateTime:
		return "datetime'" + v.s + "'"
	case tGuid:
		return "guid'" + v.s + "'"
	case tBinary:
		return "X'" + hex.EncodeToString(v.bin) + "'"
	}
	return "?"
}

// comparisons counts a filter's comparisons (Azure allows 15).
func (n *fnode) comparisons() int {
	switch n.op {
	case "and", "or":
		return n.l.comparisons() + n.r.comparisons()
	case "not":
		return n.l.comparisons()
	case "const":
		return 0
	}
	return 1
}

// filter generates a filter over the entities of data, of depth at
// most depth: comparisons of their properties (and the keys) with
// literals mostly of the property's type and drawn near the values the
// data holds, sometimes of another type (mismatched), sometimes of a
// property no entity has.
func (g *gen) filter(data []*gentity, depth int) *fnode {
	var n *fnode
	if depth > 0 && g.chance(0.55) {
		switch k := g.pick(5); {
		case k < 2:
			n = &fnode{op: "and", l: g.filter(data, depth-1), r: g.filter(data, depth-1)}
		case k < 4:
			n = &fnode{op: "or", l: g.filter(data, depth-1), r: g.filter(data, depth-1)}
		default:
			n = &fnode{op: "not", l: g.filter(data, depth-1)}
		}
	} else {
		n = g.comparison(data)
	}
	n.parens = g.chance(0.1)
	return n
}

func (g *gen) comparison(data []*gentity) *fnode {
	n := &fnode{op: cmpOps[g.pick(len(cmpOps))]}
	e := data[g.pick(len(data))]
	switch k := g.pick(20); {
	case k < 3:
		n.prop = "PartitionKey"
	case k < 5:
		n.prop = "RowKey"
	case k < 6:
		n.prop = "Missing"
	default:
		n.prop = filterSchema[g.pick(len(filterSchema))].name
	}
	v, ok := e.prop(n.prop)
	if !ok || (v.t == tDouble && (math.IsNaN(v.f) || math.IsInf(v.f, 0))) {
		v = g.value(filterSchema[g.pick(len(filterSchema))].t)
	}
	switch {
	case g.chance(0.15): // a literal of another type
		v = g.value(edm(g.pick(int(numEDM))))
	case g.chance(0.3): // a fresh value of the same type
		v = g.value(v.t)
	}
	if v.t == tDouble && (math.IsNaN(v.f) || math.IsInf(v.f, 0) || math.Abs(v.f) > 1e15 || (v.f != 0 && math.Abs(v.f) < 1e-6)) {
		v = gval{t: tDouble, f: 2.5}
	}
	n.lit = v
	n.reversed = g.chance(0.05)
	return n
}

// verdict is the typed evaluation of a filter on one entity: its
// value, whether it is certain, and whether a comparison met a property
// of another type than its literal's.
type verdict struct {
	val, known, mismatch bool
}

// eval evaluates n on e by the Table service's rules as docs/EMULATOR.md
// ("Filters") settles them with their evidence: a missing property makes
// a comparison false; a number literal is widened to a wider property
// type (Int32 to Int64 or Double, Int64 to Double) and compared
// numerically; any other pair of types decides eq, gt and ge false and
// ne, lt and le true; strings compare by UTF-16 code units; a bare
// property is true only for a Boolean true. What the evidence leaves
// open is not known: Guid and Binary ordered, NaN.
func (n *fnode) eval(e *gentity) verdict {
	switch n.op {
	case "and", "or":
		l, r := n.l.eval(e), n.r.eval(e)
		v := verdict{mismatch: l.mismatch || r.mismatch}
		if n.op == "and" {
			v.val = l.val && r.val
			v.known = (l.known && r.known) || (l.known && !l.val) || (r.known && !r.val)
		} else {
			v.val = l.val || r.val
			v.known = (l.known && r.known) || (l.known && l.val) || (r.known && r.val)
		}
		return v
	case "not":
		v := n.l.eval(e)
		v.val = !v.val
		return v
	case "const":
		return verdict{val: n.lit.b, known: true}
	case "bare":
		p, ok := e.prop(n.prop)
		return verdict{val: ok && p.t == tBool && p.b, known: true}
	}
	p, ok := e.prop(n.prop)
	if !ok {
		return verdict{val: false, known: true}
	}
	lit := n.lit
	if p.t != lit.t {
		switch {
		case p.t == tInt64 && lit.t == tInt32:
			lit = gval{t: tInt64, i: lit.i}
		case p.t == tDouble && (lit.t == tInt32 || lit.t == tInt64):
			lit = gval{t: tDouble, f: float64(lit.i)}
		default:
			// The property counts as below the literal.
			return verdict{val: n.op == "ne" || n.op == "lt" || n.op == "le", known: !n.reversed, mismatch: true}
		}
		v := lit.eval(n, p)
		v.mismatch = true
		return v
	}
	return lit.eval(n, p)
}

// eval compares property value p with lit, of p's type, by n's operator.
func (lit gval) eval(n *fnode, p gval) verdict {
	op := n.op
	if n.reversed { // literal op prop is prop op' literal
		op = map[string]string{"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}[op]
	}
	var c int
	switch p.t {
	case tString:
		c = slices.Compare(utf16.Encode([]rune(p.s)), utf16.Encode([]rune(lit.s)))
	case tInt32, tInt64:
		c = cmpInt(p.i, lit.i)
	case tDouble:
		if math.IsNaN(p.f) || math.IsNaN(lit.f) {
			return verdict{known: false}
		}
		c = cmpFloat(p.f, lit.f)
	case tBool:
		c = cmpInt(b2i(p.b), b2i(lit.b))
	case tDateTime:
		c = cmpInt(p.ticks, lit.ticks)
	case tGuid, tBinary:
		var eq bool
		if p.t == tGuid {
			eq = strings.EqualFold(p.s, lit.s)
		} else {
			eq = bytes.Equal(p.bin, lit.bin)
		}
		switch op {
		case "eq":
			return verdict{val: eq, known: true}
		case "ne":
			return verdict{val: !eq, known: true}
		}
		return verdict{known: false}
	}
	var val bool
	switch op {
	case "eq":
		val = c == 0
	case "ne":
		val = c != 0
	case "gt":
		val = c > 0
	case "ge":
		val = c >= 0
	case "lt":
		val = c < 0
	case "le":
		val = c <= 0
	}
	return verdict{val: val, known: true}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// sortEntities orders entities as the service does: by PartitionKey,
// then RowKey, each by UTF-16 code units.
func sortEntities(es []*gentity) {
	slices.SortFunc(es, func(a, b *gentity) int {
		if c := slices.Compare(utf16.Encode([]rune(a.pk)), utf16.Encode([]rune(b.pk))); c != 0 {
			return c
		}
		return slices.Compare(utf16.Encode([]rune(a.rk)), utf16.Encode([]rune(b.rk)))
	})
}

func (e *gentity) String() string { return fmt.Sprintf("(%q,%q)", e.pk, e.rk) }
