package keys

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/azrules"
)

// maxParseDepth bounds nesting (parentheses and not) so hostile input
// cannot exhaust the stack.
const maxParseDepth = 64

// ParseFilter reads a $filter string into a Filter, so raw filters found in
// existing code can be checked, classified and rebuilt. The empty (or
// all-blank) string is the zero Filter.
//
// It accepts what the Table service accepts, as far as the evidence shows
// it (docs/EMULATOR.md, "Filters"), and nothing else:
//
//   - comparisons "Name op literal", Name a valid property name (see Prop),
//     op one of eq ne gt ge lt le (lower case), the property on the left;
//   - a bare property name ("Active"), true only for an Edm.Boolean true,
//     and a bare true or false;
//   - "and", "or" (and binds tighter), "not", parentheses; operators
//     surrounded by spaces as OData requires;
//   - literals: 'string' (a quote inside is doubled); true, false; Int32
//     (-?digits, in range); Int64 (-?digits with L or l); Double (digits
//     with a fraction, an exponent or a D or d suffix: 2.5, 1E+3, 3D);
//     datetime'2014-08-22T00:50:32.0000000Z' (RFC 3339, read as UTC);
//     guid'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'; X'hex' or binary'hex';
//   - PartitionKey and RowKey compared with strings only; at most
//     MaxComparisons comparisons.
//
// Errors wrap ErrInvalidFilter and give the byte offset. A well-formed
// comparison of a form the service does not implement (two properties,
// two constants, the constant first: "A eq B", "1 eq 2", "5 lt Amount")
// is a *FilterError with Unsupported set, which also wraps
// ErrUnsupportedFilter: the service answers it 501 NotImplemented, a
// malformed filter 400 InvalidInput. Azurite answers some malformed
// filters (an unterminated string) with 200 and no rows, so checking here
// is what keeps such a filter from silently matching nothing.
func ParseFilter(s string) (Filter, error) {
	p := &parser{s: s}
	p.spaces()
	if p.pos == len(s) {
		return Filter{}, nil
	}
	n, err := p.or(0)
	if err != nil {
		return Filter{}, err
	}
	p.spaces()
	if p.pos < len(s) {
		err := p.errf("unexpected %q after the expression", p.rest()).(*FilterError)
		err.TokenEnd = p.tokenEnd()
		return Filter{}, err
	}
	f := Filter{n: n}
	if err := azrules.CheckFilterComparisons(n.comparisons()); err != nil {
		return Filter{}, filterErr("", err.Error())
	}
	return f, nil
}

type parser struct {
	s   string
	pos int
}

func (p *parser) errf(format string, args ...any) error {
	return &FilterError{Offset: p.pos, Rule: fmt.Sprintf(format, args...)}
}

// tokenEnd is the offset just past the token at p.pos: a word, a quoted
// string (its doubled quotes kept inside it), or one other character.
func (p *parser) tokenEnd() int {
	q := &parser{s: p.s, pos: p.pos}
	if w := q.word(); w != "" {
		return q.pos
	}
	if c := p.s[p.pos]; c == '\'' || c == '"' {
		for i := p.pos + 1; i < len(p.s); i++ {
			if p.s[i] == c {
				if i+1 < len(p.s) && p.s[i+1] == c {
					i++
					continue
				}
				return i + 1
			}
		}
		return len(p.s)
	}
	return p.pos + 1
}

func (p *parser) rest() string {
	r := p.s[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// spaces skips blanks and reports how many it skipped.
func (p *parser) spaces() int {
	start := p.pos
	for p.pos < len(p.s) && isSpace(p.s[p.pos]) {
		p.pos++
	}
	return p.pos - start
}

// word returns the run of characters up to a blank, parenthesis or quote.
func (p *parser) word() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if isSpace(c) || c == '(' || c == ')' || c == '\'' || c == '"' {
			break
		}
		p.pos++
	}
	return p.s[start:p.pos]
}

// infix consumes " kw " (blanks required on both sides) if it comes next.
func (p *parser) infix(kw string) bool {
	start := p.pos
	if p.spaces() > 0 && p.word() == kw && p.spaces() > 0 {
		return true
	}
	p.pos = start
	return false
}

func (p *parser) or(depth int) (*node, error) {
	var fs []Filter
	for {
		n, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		fs = append(fs, Filter{n: n})
		if !p.infix("or") {
			break
		}
	}
	return Or(fs...).n, nil
}

func (p *parser) and(depth int) (*node, error) {
	var fs []Filter
	for {
		n, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		fs = append(fs, Filter{n: n})
		if !p.infix("and") {
			break
		}
	}
	return And(fs...).n, nil
}

func (p *parser) unary(depth int) (*node, error) {
	if depth > maxParseDepth {
		return nil, p.errf("nested more than %d deep", maxParseDepth)
	}
	start := p.pos
	if p.word() == "not" {
		if p.spaces() == 0 {
			return nil, p.errf("\"not\" must be followed by a blank")
		}
		n, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{kind: kindNot, kids: []*node{n}}, nil
	}
	p.pos = start
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		p.spaces()
		n, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		p.spaces()
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return nil, p.errf("expected \")\"")
		}
		p.pos++
		return n, nil
	}
	return p.comparison()
}

// operand is one side of a comparison: a property name or a literal.
type operand struct {
	start  int
	name   string  // a property, when isProp
	lit    literal // a literal, when !isProp
	isProp bool
}

// operand reads a property name or a literal at p.pos.
func (p *parser) operand() (operand, error) {
	o := operand{start: p.pos}
	if p.pos < len(p.s) && p.s[p.pos] == '\'' {
		lit, err := p.literal()
		o.lit = lit
		return o, err
	}
	w := p.word()
	switch {
	case w == "":
		return o, p.errf("expected a property name or a value")
	case p.pos < len(p.s) && p.s[p.pos] == '\'', w == "true", w == "false",
		w[0] == '-' || w[0] == '.' || (w[0] >= '0' && w[0] <= '9'):
		p.pos = o.start
		lit, err := p.literal()
		o.lit = lit
		return o, err
	}
	if err := validatePropertyName(w); err != nil {
		err.(*FilterError).Offset = o.start
		return o, err
	}
	o.name, o.isProp = w, true
	return o, nil
}

// comparison reads "Name op literal", a bare property name or a bare
// true or false.
func (p *parser) comparison() (*node, error) {
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	afterLeft := p.pos
	var op cmpOp
	var w string
	if p.spaces() > 0 {
		w = p.word()
		for i, t := range opText {
			if t != "" && t == w {
				op = cmpOp(i)
			}
		}
	}
	if op == 0 {
		if w != "" && w != "and" && w != "or" {
			p.pos = afterLeft
			p.spaces()
			err := p.errf("expected eq, ne, gt, ge, lt or le, and, or or the end, found %q", w).(*FilterError)
			err.TokenEnd = p.pos + len(w)
			return nil, err
		}
		p.pos = afterLeft
		switch {
		case left.isProp:
			f := newCmp(left.name, opEq, literal{kind: litBool, bo: true})
			if f.err != nil {
				f.err.(*FilterError).Offset = left.start
				return nil, f.err
			}
			f.n.bare = true
			return f.n, nil
		case left.lit.kind == litBool:
			return &node{kind: kindConst, lit: left.lit}, nil
		}
		p.pos = left.start
		return nil, p.errf("a value alone is not a condition")
	}
	if p.spaces() == 0 {
		return nil, p.errf("expected a blank and a value after %s", w)
	}
	right, err := p.operand()
	if err != nil {
		return nil, err
	}
	if !left.isProp || right.isProp {
		what := "a constant before the property"
		switch {
		case left.isProp:
			what = "two properties"
		case !right.isProp:
			what = "two constants"
		}
		return nil, &FilterError{Offset: left.start, Unsupported: true,
			Rule: "the service does not implement a comparison of " + what + " (it answers 501 NotImplemented); write Name op value"}
	}
	f := newCmp(left.name, op, right.lit)
	if f.err != nil {
		f.err.(*FilterError).Offset = right.start
		return nil, f.err
	}
	return f.n, nil
}

// quoted reads a single-quoted string at p.pos, with each quote inside doubled.
func (p *parser) quoted() (string, error) {
	start := p.pos
	if p.pos >= len(p.s) || p.s[p.pos] != '\'' {
		return "", p.errf("expected '")
	}
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		if c != '\'' {
			b.WriteByte(c)
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '\'' {
			b.WriteByte('\'')
			p.pos++
			continue
		}
		return b.String(), nil
	}
	p.pos = start
	return "", p.errf("unterminated string literal")
}

func (p *parser) literal() (literal, error) {
	start := p.pos
	if p.pos < len(p.s) && p.s[p.pos] == '\'' {
		s, err := p.quoted()
		if err != nil {
			return literal{}, err
		}
		return literal{kind: litString, s: s}, nil
	}
	w := p.word()
	if p.pos < len(p.s) && p.s[p.pos] == '\'' {
		bodyStart := p.pos
		body, err := p.quoted()
		if err != nil {
			return literal{}, err
		}
		bad := func(what string) (literal, error) {
			p.pos = bodyStart
			return literal{}, p.errf("%q is not a valid %s", body, what)
		}
		switch w {
		case "datetime":
			t, err := time.Parse(time.RFC3339Nano, body)
			if err != nil {
				return bad("datetime (RFC 3339)")
			}
			l, err := timeLiteral("", t)
			if err != nil {
				return bad("datetime (years 1 to 9999)")
			}
			return l, nil
		case "guid":
			g, ok := parseGUID(body)
			if !ok {
				return bad("guid")
			}
			return literal{kind: litGuid, g: g}, nil
		case "X", "binary":
			b, err := hex.DecodeString(body)
			if err != nil {
				return bad("binary (hexadecimal)")
			}
			return literal{kind: litBinary, b: b}, nil
		}
		p.pos = start
		return literal{}, p.errf("unknown typed literal %q (want datetime, guid, X or binary)", w)
	}
	switch w {
	case "true", "false":
		return literal{kind: litBool, bo: w == "true"}, nil
	case "":
		return literal{}, p.errf("expected a value")
	}
	if l, ok := parseNumber(w); ok {
		return l, nil
	}
	p.pos = start
	return literal{}, p.errf("%q is not a value (strings go in single quotes)", w)
}

// parseNumber reads an OData number literal: Int32 digits, Int64 digits
// with L or l, or a Double (a fraction, an exponent or a D or d suffix, or
// several: 2.5, -1E+3, 3D, 2.5e-3d).
func parseNumber(w string) (literal, bool) {
	digits := strings.TrimPrefix(w, "-")
	if d, ok := strings.CutSuffix(digits, "L"); ok || strings.HasSuffix(digits, "l") {
		if !ok {
			d = digits[:len(digits)-1]
		}
		if !allDigits(d) {
			return literal{}, false
		}
		n, err := strconv.ParseInt(w[:len(w)-1], 10, 64)
		return literal{kind: litInt64, i: n}, err == nil
	}
	if allDigits(digits) {
		n, err := strconv.ParseInt(w, 10, 32)
		return literal{kind: litInt32, i: n}, err == nil
	}
	num, suffixed := strings.CutSuffix(digits, "D")
	if !suffixed {
		num, suffixed = strings.CutSuffix(digits, "d")
	}
	mant, exp, hasExp := strings.Cut(num, "E")
	if !hasExp {
		mant, exp, hasExp = strings.Cut(num, "e")
	}
	ip, fp, hasFrac := strings.Cut(mant, ".")
	if !allDigits(ip) || (hasFrac && !allDigits(fp)) || !(hasFrac || hasExp || suffixed) {
		return literal{}, false
	}
	if hasExp && !allDigits(strings.TrimLeft(exp, "+-")) || len(exp)-len(strings.TrimLeft(exp, "+-")) > 1 {
		return literal{}, false
	}
	text := strings.TrimSuffix(strings.TrimSuffix(w, "D"), "d")
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return literal{}, false
	}
	return literal{kind: litDouble, f: f}, true
}

func parseGUID(s string) ([16]byte, bool) {
	var g [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(g[:], []byte(h)); err != nil {
		return g, false
	}
	return g, true
}
