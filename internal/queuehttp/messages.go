package queuehttp

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/tkerr"
)

// Message is a received message, as Get Messages returns it: what the
// worker uses of it (ExpirationTime is not read).
type Message struct {
	ID              string
	PopReceipt      string
	Text            string
	DequeueCount    int64
	InsertionTime   time.Time
	TimeNextVisible time.Time
}

// rawMessage is a message's fields as the document holds them, unescaped:
// what both readers of a batch produce, and compare in the tests.
type rawMessage struct {
	MessageID       string `xml:"MessageId"`
	InsertionTime   string `xml:"InsertionTime"`
	ExpirationTime  string `xml:"ExpirationTime"`
	PopReceipt      string `xml:"PopReceipt"`
	TimeNextVisible string `xml:"TimeNextVisible"`
	DequeueCount    string `xml:"DequeueCount"`
	MessageText     string `xml:"MessageText"`
}

// rawList is the document of Get Messages, for encoding/xml.
type rawList struct {
	XMLName xml.Name     `xml:"QueueMessagesList"`
	Items   []rawMessage `xml:"QueueMessage"`
}

// errMalformed is what a batch that is not a QueueMessagesList returns.
var errMalformed = errors.New("tablekit: the queue service's answer to a receive is not a list of messages")

// ParseMessages reads the body of a Get Messages answer. The document the
// service sends (an XML declaration, QueueMessagesList, QueueMessage
// elements of text-only fields) is read by scanMessages; a document that
// strays from it (a comment, a CDATA section, an attribute, a carriage
// return, a character it does not check) is read by encoding/xml, as
// azqueue reads every one. Both give the same fields for every document
// scanMessages accepts (FuzzParseMessages).
func ParseMessages(body []byte) ([]Message, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	raws, ok := scanMessages(body)
	if !ok {
		var l rawList
		if err := xml.Unmarshal(body, &l); err != nil {
			return nil, tkerr.Errorf("%w: %w", errMalformed, err)
		}
		raws = l.Items
	}
	out := make([]Message, len(raws))
	for i, r := range raws {
		m, err := r.message()
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// message converts the fields as azqueue does: the times in RFC 1123, the
// dequeue count a decimal (spaces around it allowed, as encoding/xml
// allows them around a number).
func (r *rawMessage) message() (Message, error) {
	m := Message{ID: r.MessageID, PopReceipt: r.PopReceipt, Text: r.MessageText}
	var err error
	if s := strings.TrimSpace(r.DequeueCount); s != "" {
		if m.DequeueCount, err = strconv.ParseInt(s, 10, 64); err != nil {
			return Message{}, tkerr.Errorf("%w: %w", errMalformed, err)
		}
	}
	for _, t := range [...]struct {
		s   string
		dst *time.Time
	}{{r.InsertionTime, &m.InsertionTime}, {r.TimeNextVisible, &m.TimeNextVisible}} {
		if t.s == "" {
			continue
		}
		if *t.dst, err = time.Parse(time.RFC1123, t.s); err != nil {
			return Message{}, tkerr.Errorf("%w: %w", errMalformed, err)
		}
	}
	return m, nil
}

// Scanned reports whether ParseMessages reads body with its own scanner,
// without encoding/xml: the tests that hold a service's answers to a
// receive to the scanner's shape ask it from outside this package.
func Scanned(body []byte) bool {
	_, ok := scanMessages(body)
	return ok
}

// scanMessages reads the document Get Messages sends:
//
//	<?xml version="1.0" encoding="utf-8"?>
//	<QueueMessagesList><QueueMessage><MessageId>…</MessageId>…</QueueMessage>…</QueueMessagesList>
//
// with white space between elements, fields in any order, unknown
// text-only fields skipped, empty fields as <Name/> or <Name></Name>, and
// the five predefined entities and character references in text. It
// returns false for anything else, which encoding/xml then reads.
func scanMessages(b []byte) ([]rawMessage, bool) {
	s := scanner{b: b}
	s.space()
	if s.prefix("<?xml ") {
		i := bytes.Index(s.b[s.i:], []byte("?>"))
		if i < 0 || !plainDecl(s.b[s.i:s.i+i]) {
			return nil, false
		}
		s.i += i + 2
		s.space()
	}
	name, empty, ok := s.start()
	if !ok || string(name) != "QueueMessagesList" {
		return nil, false
	}
	var out []rawMessage
	if !empty {
		for {
			s.space()
			if s.prefix("</") {
				if !s.end("QueueMessagesList") {
					return nil, false
				}
				break
			}
			name, empty, ok := s.start()
			if !ok || string(name) != "QueueMessage" {
				return nil, false
			}
			var m rawMessage
			if !empty && !s.fields(&m) {
				return nil, false
			}
			out = append(out, m)
		}
	}
	s.space()
	return out, s.i == len(s.b)
}

// plainDecl reports whether the XML declaration's attributes (what
// follows "<?xml ") say version 1.0 and, if anything, the UTF-8 encoding
// (encoding/xml refuses a document in another encoding) and standalone
// (Azurite's answers say standalone="yes").
func plainDecl(attrs []byte) bool {
	switch strings.ToLower(strings.TrimSpace(strings.ReplaceAll(string(attrs), "'", `"`))) {
	case `version="1.0"`, `version="1.0" encoding="utf-8"`, `version="1.0" encoding="utf-8" standalone="yes"`,
		`version="1.0" standalone="yes"`:
		return true
	}
	return false
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n':
			s.i++
		default:
			return
		}
	}
}

// prefix consumes p when the input continues with it.
func (s *scanner) prefix(p string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(p)) {
		return false
	}
	s.i += len(p)
	return true
}

// start reads a start tag without attributes, <Name> or <Name/> (white
// space allowed before the > or />), and reports whether it was empty.
func (s *scanner) start() (name []byte, empty, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '<' {
		return nil, false, false
	}
	s.i++
	name, ok = s.name()
	if !ok {
		return nil, false, false
	}
	s.space()
	switch {
	case s.prefix(">"):
		return name, false, true
	case s.prefix("/>"):
		return name, true, true
	}
	return nil, false, false
}

// end reads the rest of an end tag after its "</": Name, white space, >.
func (s *scanner) end(want string) bool {
	name, ok := s.name()
	if !ok || string(name) != want {
		return false
	}
	s.space()
	return s.prefix(">")
}

// endBytes is end for a name held as bytes.
func (s *scanner) endBytes(want []byte) bool {
	name, ok := s.name()
	if !ok || !bytes.Equal(name, want) {
		return false
	}
	s.space()
	return s.prefix(">")
}

// name reads an element name of ASCII letters and digits (every name of
// the document is one), starting with a letter. It returns the input's
// bytes: names are compared, never kept.
func (s *scanner) name() ([]byte, bool) {
	j := s.i
	for j < len(s.b) {
		c := s.b[j]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || j > s.i && '0' <= c && c <= '9' {
			j++
			continue
		}
		break
	}
	if j == s.i {
		return nil, false
	}
	name := s.b[s.i:j]
	s.i = j
	return name, true
}

// fields reads a QueueMessage's fields and its end tag.
func (s *scanner) fields(m *rawMessage) bool {
	for {
		s.space()
		if s.prefix("</") {
			return s.end("QueueMessage")
		}
		name, empty, ok := s.start()
		if !ok {
			return false
		}
		text := ""
		if !empty {
			if text, ok = s.text(); !ok || !s.prefix("</") || !s.endBytes(name) {
				return false
			}
		}
		switch string(name) {
		case "MessageId":
			m.MessageID = text
		case "InsertionTime":
			m.InsertionTime = text
		case "ExpirationTime":
			m.ExpirationTime = text
		case "PopReceipt":
			m.PopReceipt = text
		case "TimeNextVisible":
			m.TimeNextVisible = text
		case "DequeueCount":
			m.DequeueCount = text
		case "MessageText":
			m.MessageText = text
		}
	}
}

// text reads character data up to the next '<', resolving references. It
// refuses what encoding/xml would read differently or reject: a carriage
// return (XML turns line ends into \n), a ']]>' (an error in text), a
// character XML does not allow, invalid UTF-8, an unknown entity.
func (s *scanner) text() (string, bool) {
	start := s.i
	plain := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '<':
			if plain {
				return string(s.b[start:s.i]), true
			}
			return unescape(s.b[start:s.i])
		case c == '&':
			plain = false
			s.i++
		case c == '\r' || c < 0x20 && c != '\t' && c != '\n':
			return "", false
		case c == ']' && bytes.HasPrefix(s.b[s.i:], []byte("]]>")):
			return "", false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 || !xmlChar(r) {
				return "", false
			}
			s.i += n
		}
	}
	return "", false
}

// unescape resolves the references of text, which holds no '<'.
func unescape(text []byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(text))
	for len(text) > 0 {
		i := bytes.IndexByte(text, '&')
		if i < 0 {
			b.Write(text)
			break
		}
		b.Write(text[:i])
		text = text[i+1:]
		j := bytes.IndexByte(text, ';')
		if j < 0 {
			return "", false
		}
		ref := text[:j]
		text = text[j+1:]
		switch string(ref) {
		case "lt":
			b.WriteByte('<')
		case "gt":
			b.WriteByte('>')
		case "amp":
			b.WriteByte('&')
		case "apos":
			b.WriteByte('\'')
		case "quot":
			b.WriteByte('"')
		default:
			r, ok := charRef(ref)
			if !ok {
				return "", false
			}
			b.WriteRune(r)
		}
	}
	return b.String(), true
}

// charRef reads a character reference's body, "#65" or "#x41".
func charRef(ref []byte) (rune, bool) {
	if len(ref) < 2 || ref[0] != '#' {
		return 0, false
	}
	digits, base := ref[1:], rune(10)
	if digits[0] == 'x' {
		digits, base = digits[1:], 16
	}
	if len(digits) == 0 || len(digits) > 8 {
		return 0, false
	}
	var n rune
	for _, c := range digits {
		var d rune
		switch {
		case '0' <= c && c <= '9':
			d = rune(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = rune(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = rune(c-'A') + 10
		default:
			return 0, false
		}
		n = n*base + d
	}
	if n > utf8.MaxRune || !xmlChar(n) {
		return 0, false
	}
	if n == '\r' {
		return 0, false // encoding/xml keeps a referenced \r; left to it
	}
	return n, true
}

// xmlChar reports whether XML 1.0 allows r in a document (its Char
// production), as encoding/xml checks it.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// messageBody is the body of Update Message: the text in a QueueMessage,
// escaped as azqueue escapes it (encoding/xml's EscapeText).
func messageBody(text string) []byte {
	var b bytes.Buffer
	b.Grow(len(`<?xml version="1.0" encoding="UTF-8"?>`+"\n<QueueMessage><MessageText></MessageText></QueueMessage>") + len(text) + len(text)/4)
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<QueueMessage><MessageText>")
	_ = xml.EscapeText(&b, []byte(text))
	b.WriteString("</MessageText></QueueMessage>")
	return b.Bytes()
}
