package blobs

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Tag filters: the expression Find Blobs by Tags takes in where= (find.go)
// and the conditions x-ms-if-tags and x-ms-source-if-tags take, one
// grammar read by one parser ("Manage and find Azure Blob data with blob
// index tags"; REST "Find Blobs by Tags", "Find Blobs by Tags in
// Container"):
//
//	expression := term (AND term)*          OR between terms: conditions only
//	term       := "(" expression ")" | key operator 'value'
//	key        := "quoted key" | identifier | @container
//	operator   := = | > | >= | < | <=       <> (not equal): conditions only
//
// A key is a tag's name in double quotes ("" inside stands for one ") or,
// unquoted, letters, digits and _; a value is in single quotes ('' for
// one '). AND and OR are matched whatever their case. Values compare as
// strings, byte by byte (tags hold ASCII only, so this is Azure's
// lexicographic order), and a comparison with a tag the blob does not
// have is false, <> too.
//
// Find Blobs by Tags also takes @container = 'name' (on the account only:
// "@container is not supported when the container is part of a URI"),
// and refuses what the conditions let pass: a key outside 1 to 128
// characters, a value over 256, more than 10 distinct tags, and a second
// comparison of a key unless the two bound a range from either side
// ("Same sided range operations on the same key are invalid"). Its
// refusal is 400 InvalidQueryParameterValue, "Error parsing query at or
// near character position N: ..." with QueryParameterName where (a real
// account's answer quoted in Azure/azure-cli#21956); a condition's is
// 400 InvalidHeaderValue naming the header (Azurite 3.37's, weak). The
// words and positions after "position N:" are Azurite's
// (QueryParser.ts), weak as evidence of Azure's.

// tagOp is what a tagExpr does.
type tagOp uint8

const (
	tagEq tagOp = iota + 1
	tagNe
	tagGt
	tagGe
	tagLt
	tagLe
	tagAnd
	tagOr
)

// tagExpr is a parsed expression: a comparison of a key with a value, or
// the AND or OR of its args.
type tagExpr struct {
	op         tagOp
	key, value string     // a comparison's
	args       []*tagExpr // tagAnd's and tagOr's, two or more
}

// tagFilter is a parsed tag filter.
type tagFilter struct {
	root *tagExpr
	// keys are the tag keys the expression compares, sorted, without
	// @container: Find Blobs by Tags answers with a blob's tags of these
	// keys only.
	keys []string
}

// filterUse is where an expression comes from, which decides what it may
// hold.
type filterUse uint8

const (
	findInAccount   filterUse = iota + 1 // where= of Find Blobs by Tags on the account
	findInContainer                      // where= of Find Blobs by Tags on a container
	tagCondition                         // x-ms-if-tags, x-ms-source-if-tags
)

const (
	// containerKey is the key that names a blob's container in where=.
	containerKey = "@container"
	// maxFilterTags is how many distinct tags where= may compare.
	maxFilterTags = 10
	// maxFilterDepth bounds the nesting of parentheses, so that an
	// expression cannot run the parser or a match arbitrarily deep (the
	// emulator's bound; Azure's is not documented).
	maxFilterDepth = 32
)

// parseTagFilter parses expr as use takes it. name is the header a
// condition comes in (x-ms-if-tags, x-ms-source-if-tags), for the
// refusal.
func parseTagFilter(expr string, use filterUse, name string) (*tagFilter, *answer.Error) {
	p := &tagParser{s: expr, use: use, sides: map[string][]tagOp{}}
	root, fe := p.expression(0)
	if fe == nil {
		p.space()
		if p.pos < len(p.s) {
			fe = p.fail("Unexpected token '" + p.peekText() + "'.")
		}
	}
	if fe != nil {
		if use == tagCondition {
			return nil, answer.InvalidHeader(name, expr)
		}
		msg := "Error parsing query at or near character position " + strconv.Itoa(fe.pos) + ": " + fe.msg
		if fe.pos < 0 {
			msg = "Error parsing query: " + fe.msg
		}
		return nil, answer.New(http.StatusBadRequest, answer.CodeInvalidQueryParameter, msg).WithDetails(
			answer.Detail{Name: "QueryParameterName", Value: "where"}, answer.Detail{Name: "QueryParameterValue", Value: expr})
	}
	slices.Sort(p.keys)
	return &tagFilter{root: root, keys: p.keys}, nil
}

// ifTagsCondition reads the condition header name (x-ms-if-tags,
// x-ms-source-if-tags): nil when the request has none.
func ifTagsCondition(h http.Header, name string) (*tagFilter, *answer.Error) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return nil, nil
	}
	return parseTagFilter(strings.Join(vs, ","), tagCondition, name)
}

// tagParser reads one expression.
type tagParser struct {
	s     string
	pos   int
	use   filterUse
	sides map[string][]tagOp // where=: the comparisons of each key so far
	keys  []string           // the distinct tag keys compared so far
}

// filterError is why an expression is refused: msg, near byte pos (-1 for
// no position).
type filterError struct {
	msg string
	pos int
}

func (p *tagParser) fail(msg string) *filterError { return &filterError{msg, p.pos} }

// expression reads terms joined by AND, and by OR in a condition. AND
// binds tighter than OR.
func (p *tagParser) expression(depth int) (*tagExpr, *filterError) {
	var or []*tagExpr
	for {
		var and []*tagExpr
		for {
			t, fe := p.term(depth)
			if fe != nil {
				return nil, fe
			}
			and = appendFlat(and, t, tagAnd)
			p.space()
			if !p.keyword("and") {
				break
			}
		}
		or = append(or, join(and, tagAnd))
		if !p.keyword("or") {
			break
		}
		if p.use != tagCondition {
			return nil, p.fail("unexpected or")
		}
	}
	return join(or, tagOr), nil
}

// appendFlat appends t to args, or t's args when t is itself op.
func appendFlat(args []*tagExpr, t *tagExpr, op tagOp) []*tagExpr {
	if t.op == op {
		return append(args, t.args...)
	}
	return append(args, t)
}

// join is the op of args, or args[0] alone.
func join(args []*tagExpr, op tagOp) *tagExpr {
	if len(args) == 1 {
		return args[0]
	}
	return &tagExpr{op: op, args: args}
}

// term reads a parenthesized expression or a comparison.
func (p *tagParser) term(depth int) (*tagExpr, *filterError) {
	p.space()
	if p.peek() != '(' {
		return p.comparison()
	}
	if depth == maxFilterDepth {
		return nil, p.fail("too many nested expressions")
	}
	p.pos++
	e, fe := p.expression(depth + 1)
	if fe != nil {
		return nil, fe
	}
	p.space()
	if p.peek() != ')' {
		return nil, p.fail("Expected a ')' to close the expression group, but found '" + p.peekText() + "' instead.")
	}
	p.pos++
	return e, nil
}

// operators in the order they are tried: a longer one before its prefix.
var tagOperators = []struct {
	text string
	op   tagOp
}{{"=", tagEq}, {">=", tagGe}, {"<=", tagLe}, {"<>", tagNe}, {">", tagGt}, {"<", tagLt}}

// comparison reads key operator 'value'.
func (p *tagParser) comparison() (*tagExpr, *filterError) {
	key, fe := p.key()
	if fe != nil {
		return nil, fe
	}
	p.space()
	var op tagOp
	for _, o := range tagOperators {
		if strings.HasPrefix(p.s[p.pos:], o.text) {
			op = o.op
			p.pos += len(o.text)
			break
		}
	}
	switch {
	case op == 0:
		return nil, p.fail("expected an operator")
	case op == tagNe && p.use != tagCondition:
		return nil, p.fail("unexpected <>")
	}
	value, fe := p.value(key)
	if fe != nil {
		return nil, fe
	}
	if fe := p.compared(key, op); fe != nil {
		return nil, fe
	}
	return &tagExpr{op: op, key: key, value: value}, nil
}

// key reads a quoted key or an identifier and checks it.
func (p *tagParser) key() (string, *filterError) {
	if p.peek() == '"' {
		k, fe := p.quoted('"')
		if fe != nil {
			return "", fe
		}
		return k, p.checkKey(k, true)
	}
	start := p.pos
	for p.pos < len(p.s) && !isFilterSpace(p.s[p.pos]) && strings.IndexByte("=<>()'\"", p.s[p.pos]) < 0 {
		p.pos++
	}
	if p.pos == start {
		return "", p.fail("Expected a valid identifier, but found '" + p.peekText() + "' instead.")
	}
	k := p.s[start:p.pos]
	return k, p.checkKey(k, false)
}

// checkKey refuses a key the expression may not compare.
func (p *tagParser) checkKey(k string, quoted bool) *filterError {
	if strings.HasPrefix(k, "@") {
		if k != containerKey || p.use != findInAccount {
			return p.fail("unsupported parameter '" + k + "'")
		}
		return nil
	}
	if n := utf8.RuneCountInString(k); p.use != tagCondition && (n == 0 || n > maxTagKeyLen) {
		return p.fail("tag must be between 1 and 128 characters in length")
	}
	if quoted {
		return p.checkChars(k)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return p.fail("unexpected '" + k + "'")
		}
	}
	return nil
}

// checkChars refuses a character a tag cannot hold (tagChars).
func (p *tagParser) checkChars(s string) *filterError {
	for _, r := range s {
		if r >= utf8.RuneSelf || !tagChars(string(r)) {
			return p.fail("'" + string(r) + "' not permitted in tag name or value")
		}
	}
	return nil
}

// value reads the quoted value compared with key.
func (p *tagParser) value(key string) (string, *filterError) {
	p.space()
	if p.peek() != '\'' {
		return "", p.fail("expecting tag value")
	}
	v, fe := p.quoted('\'')
	if fe != nil {
		return "", fe
	}
	if key == containerKey {
		// A container's name, not a tag's value.
		return v, nil
	}
	if p.use != tagCondition && utf8.RuneCountInString(v) > maxTagValueLen {
		return "", p.fail("tag value must be between 0 and 256 characters in length")
	}
	return v, p.checkChars(v)
}

// quoted reads a string in q quotes, q doubled standing for one q.
func (p *tagParser) quoted(q byte) (string, *filterError) {
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return "", p.fail("Expected a `" + string(q) + "` to close the string, but found the end of the query instead.")
		}
		c := p.s[p.pos]
		p.pos++
		if c == q {
			if p.peek() != q {
				return b.String(), nil
			}
			p.pos++
		}
		b.WriteByte(c)
	}
}

// compared records a comparison of key by op: where= refuses a key
// compared twice unless the two bound a range from either side, and more
// than maxFilterTags distinct tags.
func (p *tagParser) compared(key string, op tagOp) *filterError {
	if p.use == tagCondition {
		return nil
	}
	for _, prev := range p.sides[key] {
		if op == tagEq || prev == tagEq || side(op) == side(prev) {
			return p.fail("can't have multiple conditions for a single tag unless they define a range")
		}
	}
	if key != containerKey && p.sides[key] == nil {
		p.keys = append(p.keys, key)
		if len(p.keys) > maxFilterTags {
			return &filterError{"there can be at most 10 unique tags in a query", -1}
		}
	}
	p.sides[key] = append(p.sides[key], op)
	return nil
}

// side is the side a range comparison bounds: 1 from below, -1 from
// above.
func side(op tagOp) int {
	if op == tagGt || op == tagGe {
		return 1
	}
	return -1
}

// keyword consumes word, whatever its case, when it stands alone.
func (p *tagParser) keyword(word string) bool {
	p.space()
	end := p.pos + len(word)
	if end > len(p.s) || !strings.EqualFold(p.s[p.pos:end], word) {
		return false
	}
	if end < len(p.s) {
		if c := p.s[end]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' {
			return false
		}
	}
	p.pos = end
	return true
}

func (p *tagParser) space() {
	for p.pos < len(p.s) && isFilterSpace(p.s[p.pos]) {
		p.pos++
	}
}

func isFilterSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// peek is the next byte, 0 at the end.
func (p *tagParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

// peekText is the next character as text, "" at the end.
func (p *tagParser) peekText() string {
	if p.pos >= len(p.s) {
		return ""
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return string(r)
}

// match says whether a blob with tags, in the container named container,
// meets the filter.
func (f *tagFilter) match(tags tagSet, container string) bool { return f.root.match(tags, container) }

func (e *tagExpr) match(tags tagSet, container string) bool {
	switch e.op {
	case tagAnd:
		for _, a := range e.args {
			if !a.match(tags, container) {
				return false
			}
		}
		return true
	case tagOr:
		for _, a := range e.args {
			if a.match(tags, container) {
				return true
			}
		}
		return false
	}
	have, ok := container, e.key == containerKey
	if !ok {
		have, ok = tags.get(e.key)
	}
	if !ok {
		return false
	}
	c := strings.Compare(have, e.value)
	switch e.op {
	case tagEq:
		return c == 0
	case tagNe:
		return c != 0
	case tagGt:
		return c > 0
	case tagGe:
		return c >= 0
	case tagLt:
		return c < 0
	}
	return c <= 0
}

// containerMay says whether blobs of the container named name may meet a
// where= filter: its @container comparisons hold. where= joins its terms
// by AND only, so each must hold.
func (f *tagFilter) containerMay(name string) bool {
	terms := []*tagExpr{f.root}
	if f.root.op == tagAnd {
		terms = f.root.args
	}
	for _, t := range terms {
		if t.key == containerKey && !t.match(nil, name) {
			return false
		}
	}
	return true
}

// of is the blob's tags of the keys the filter compares.
func (f *tagFilter) of(tags tagSet) tagSet {
	var out tagSet
	for _, t := range tags {
		if _, found := slices.BinarySearch(f.keys, t.name); found {
			out = append(out, t)
		}
	}
	return out
}

// get is the value of the tag named key.
func (t tagSet) get(key string) (string, bool) {
	for _, p := range t {
		if p.name == key {
			return p.value, true
		}
	}
	return "", false
}
