// Package headcase carries the letter case of metadata names past Go's
// HTTP server.
//
// Azure keeps the case a blob's, container's or queue's metadata name was
// written with (x-ms-meta-Owner reads back as x-ms-meta-Owner) and
// compares names ignoring case. Go's net/http puts every request header
// name in its canonical form (X-Ms-Meta-Owner, and x-ms-meta-ownerID
// becomes X-Ms-Meta-Ownerid) before a handler sees it, and keeps no copy
// of the bytes sent. So the spelling is taken from the bytes themselves:
// Listen wraps a listener's connections in a reader that follows each
// HTTP/1.1 request's framing (its head, then a Content-Length or chunked
// body skipped unread) and, after every x-ms-meta-* line of a head, adds a
// line of its own naming the metadata name as sent. Name reads it back.
//
// What it costs: heads are read line by line (one IndexByte a line and a
// look at its first byte); bodies are skipped by their length, never
// scanned; a read whose head holds no x-ms-meta- line is handed on as it
// came, untouched and uncopied. Handlers pay only where they read
// metadata, and only when there is some.
//
// The added line's name holds a random part chosen when the process
// starts, so no client can send it. It does not begin with x-ms-, so
// Shared Key's canonicalized headers (the x-ms-* headers, names
// lowercased) are those the client signed. Nothing changes a body: the
// reader stops adding lines on a connection whose framing it cannot
// follow (a malformed length, an unknown transfer coding), which Go's
// server refuses and closes anyway. The emulator serves plain HTTP/1.1
// only (no TLS, so no HTTP/2); a TLS listener would need the reader above
// the TLS layer.
package headcase

import (
	"bytes"
	"crypto/rand"
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// metaPrefix starts every metadata header's name.
const metaPrefix = "x-ms-meta-"

// sentKey is the added header's name, canonical, with a random part no
// client can know.
var sentKey = textproto.CanonicalMIMEHeaderKey("Tablekit-Meta-Sent-" + rand.Text())

// Name returns the metadata name of key, an x-ms-meta-* header name of a
// request read through Listen's connections (in Go's canonical form, as a
// handler sees it), with the case the client wrote it in. For a request
// that did not come through Listen it is key's own spelling.
func Name(h http.Header, key string) string {
	name := key[len(metaPrefix):]
	for _, v := range h[sentKey] {
		if strings.EqualFold(v, name) {
			return v
		}
	}
	return name
}

// Listen wraps ln: its connections carry, for each x-ms-meta-* header of a
// request, the name as sent, for Name.
func Listen(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c}, nil
}

// conn is one connection's byte stream with the added lines.
type conn struct {
	net.Conn
	p       parser
	pending []byte // rewritten bytes the caller has not taken yet
	err     error  // the read error behind pending
}

// NetConn returns the connection c reads from, as tls.Conn.NetConn
// does: a server reads a TLS connection's state through it.
func (c *conn) NetConn() net.Conn { return c.Conn }

func (c *conn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 && c.err != nil {
			err := c.err
			c.err = nil
			return n, err
		}
		return n, nil
	}
	n, err := c.Conn.Read(b)
	if n == 0 {
		return n, err
	}
	out, added := c.p.feed(b[:n])
	if !added {
		return n, err
	}
	k := copy(b, out)
	if k < len(out) {
		c.pending = out[k:]
		c.err = err
		return k, nil
	}
	return k, err
}

// CloseWrite half-closes the connection, as the server does (through a
// *net.TCPConn) to let a refused request's answer reach the client before
// it closes.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// The parser's states.
const (
	stHead      = iota // reading a request head's lines
	stBody             // skipping remain bytes of a Content-Length body
	stChunkSize        // reading a chunk-size line
	stChunkData        // skipping remain bytes of a chunk
	stChunkEnd         // reading the line that ends a chunk's data
	stTrailer          // reading a chunked body's trailer lines
	stLost             // framing not followed: add nothing more
)

// maxLine bounds the part of a line that spans reads kept to read it:
// metadata names and values together are at most 8 KiB.
const maxLine = 16 << 10

// parser follows one connection's requests.
type parser struct {
	state   int
	remain  int64  // bytes left of a body or a chunk
	carry   []byte // the start of a line begun in an earlier read
	over    bool   // that line outgrew maxLine
	started bool   // the head's request line has been read
	http10  bool   // the request is HTTP/1.0: Transfer-Encoding does not count
	length  int64  // the head's Content-Length
	chunked bool   // the head's Transfer-Encoding is chunked
	adds    []add  // this read's added lines
}

// add is a line to add after offset at of the read.
type add struct {
	at   int
	name []byte
}

// feed follows b, the next bytes read, and returns them with the added
// lines when there are any (added true), else nil and false.
func (p *parser) feed(b []byte) (out []byte, added bool) {
	p.adds = p.adds[:0]
	for i := 0; i < len(b) && p.state != stLost; {
		switch p.state {
		case stBody, stChunkData:
			k := int64(len(b) - i)
			if k > p.remain {
				k = p.remain
			}
			i += int(k)
			p.remain -= k
			if p.remain == 0 {
				if p.state == stBody {
					p.endRequest()
				} else {
					p.state = stChunkEnd
				}
			}
			continue
		}
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			p.keep(b[i:])
			break
		}
		line := b[i : i+j]
		if len(p.carry) > 0 || p.over {
			p.keep(line)
			line = p.carry
		}
		over := p.over
		p.carry, p.over = p.carry[:0], false
		i += j + 1
		line = bytes.TrimSuffix(line, []byte{'\r'})
		p.line(line, over, i)
	}
	if len(p.adds) == 0 {
		return nil, false
	}
	n := len(b)
	for _, a := range p.adds {
		n += len(sentKey) + 2 + len(a.name) + 2
	}
	out = make([]byte, 0, n)
	last := 0
	for _, a := range p.adds {
		out = append(out, b[last:a.at]...)
		out = append(out, sentKey...)
		out = append(out, ": "...)
		out = append(out, a.name...)
		out = append(out, "\r\n"...)
		last = a.at
	}
	out = append(out, b[last:]...)
	p.adds = p.adds[:0]
	return out, true
}

// keep adds b to the line carried over to the next read, up to maxLine.
func (p *parser) keep(b []byte) {
	if room := maxLine - len(p.carry); len(b) > room {
		b = b[:room]
		p.over = true
	}
	p.carry = append(p.carry, b...)
}

// endRequest readies the parser for the next request's head.
func (p *parser) endRequest() {
	p.state, p.started = stHead, false
}

// line handles one line (without its line end) ending at offset end of
// the read; over says it was longer than maxLine and is cut short.
func (p *parser) line(line []byte, over bool, end int) {
	switch p.state {
	case stHead:
		p.headLine(line, over, end)
	case stChunkSize:
		if over {
			p.state = stLost
			return
		}
		if k := bytes.IndexByte(line, ';'); k >= 0 {
			line = line[:k]
		}
		size, ok := parseHex(bytes.TrimRight(line, " \t"))
		switch {
		case !ok:
			p.state = stLost
		case size == 0:
			p.state = stTrailer
		default:
			p.state, p.remain = stChunkData, size
		}
	case stChunkEnd:
		if len(line) != 0 {
			p.state = stLost
			return
		}
		p.state = stChunkSize
	case stTrailer:
		if len(line) == 0 {
			p.endRequest()
		}
	}
}

// headLine handles one line of a request head.
func (p *parser) headLine(line []byte, over bool, end int) {
	if !p.started {
		if len(line) == 0 {
			return // Go's server skips empty lines left after a POST's body
		}
		p.started, p.length, p.chunked = true, 0, false
		p.http10 = bytes.HasSuffix(line, []byte("HTTP/1.0"))
		return
	}
	if len(line) == 0 {
		switch {
		case p.chunked:
			p.state = stChunkSize
		case p.length > 0:
			p.state, p.remain = stBody, p.length
		default:
			p.endRequest()
		}
		return
	}
	switch line[0] {
	case 'x', 'X':
		if over || !hasPrefixFold(line, metaPrefix) {
			return
		}
		k := bytes.IndexByte(line, ':')
		if k <= len(metaPrefix) {
			return
		}
		// A copy: line may be the carried line, which the next read reuses.
		p.adds = append(p.adds, add{at: end, name: bytes.Clone(line[len(metaPrefix):k])})
	case 'c', 'C':
		if v, ok := value(line, "content-length:"); ok {
			n, ok := parseDecimal(v)
			if !ok || over {
				p.state = stLost // Go's server answers 400 and closes
				return
			}
			p.length = n
		}
	case 't', 'T':
		if v, ok := value(line, "transfer-encoding:"); ok && !p.http10 {
			if !strings.EqualFold(string(v), "chunked") {
				p.state = stLost // Go's server answers 501 and closes
				return
			}
			p.chunked = true
		}
	}
}

// value returns the value of line when its name (with the colon) is
// name, ignoring case; the value without the blanks around it.
func value(line []byte, name string) ([]byte, bool) {
	if !hasPrefixFold(line, name) {
		return nil, false
	}
	return bytes.Trim(line[len(name):], " \t"), true
}

// hasPrefixFold reports whether b begins with prefix, a lowercase ASCII
// string, ignoring case.
func hasPrefixFold(b []byte, prefix string) bool {
	// The last byte first: most lines that share a first letter with
	// prefix differ there (x-ms-date, x-ms-version; content-type).
	if len(b) < len(prefix) || b[len(prefix)-1]|0x20 != prefix[len(prefix)-1]|0x20 {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// parseDecimal parses a Content-Length as Go's server does: digits only,
// at most 2^63-1.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseHex parses a chunk size: hexadecimal digits, at most 2^60-1.
func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(c)
	}
	return n, true
}
