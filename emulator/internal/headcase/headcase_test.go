package headcase

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// sent is the line the reader adds after a metadata header named name.
func sent(name string) string { return sentKey + ": " + name + "\r\n" }

// stream is a connection's bytes in, and what the server must read.
type stream struct {
	name    string
	in, out string
}

// A body of text that looks like a head: were the reader to scan bodies,
// it would add lines here and change the body.
const lookalike = "PUT /evil HTTP/1.1\r\nx-ms-meta-Evil: 1\r\nContent-Length: 5\r\n\r\n"

var streams = []stream{
	{
		name: "no metadata: untouched",
		in:   "GET /a HTTP/1.1\r\nHost: h\r\nX-Ms-Version: 2021-08-06\r\nx-ms-date: now\r\n\r\n",
		out:  "GET /a HTTP/1.1\r\nHost: h\r\nX-Ms-Version: 2021-08-06\r\nx-ms-date: now\r\n\r\n",
	},
	{
		name: "a lowercase and a mixed-case name",
		in:   "PUT /c?restype=container HTTP/1.1\r\nHost: h\r\nx-ms-meta-owner: a\r\nX-MS-META-OwnerID: b\r\nContent-Length: 0\r\n\r\n",
		out: "PUT /c?restype=container HTTP/1.1\r\nHost: h\r\nx-ms-meta-owner: a\r\n" + sent("owner") +
			"X-MS-META-OwnerID: b\r\n" + sent("OwnerID") + "Content-Length: 0\r\n\r\n",
	},
	{
		name: "a Content-Length body that looks like a head, then pipelined requests",
		in: "PUT /c/b HTTP/1.1\r\ncontent-length: " + fmt.Sprint(len(lookalike)) + "\r\nx-ms-meta-Kind: log\r\n\r\n" + lookalike +
			"GET /c/b HTTP/1.1\r\nHost: h\r\n\r\n" +
			"PUT /q HTTP/1.1\r\nx-ms-meta-camelCase: 1\r\n\r\n",
		out: "PUT /c/b HTTP/1.1\r\ncontent-length: " + fmt.Sprint(len(lookalike)) + "\r\nx-ms-meta-Kind: log\r\n" + sent("Kind") + "\r\n" + lookalike +
			"GET /c/b HTTP/1.1\r\nHost: h\r\n\r\n" +
			"PUT /q HTTP/1.1\r\nx-ms-meta-camelCase: 1\r\n" + sent("camelCase") + "\r\n",
	},
	{
		name: "a chunked body with extensions and a trailer, Content-Length ignored",
		in: "PUT /c/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\nX-Ms-Meta-A: 1\r\n\r\n" +
			fmt.Sprintf("%x;ext=1\r\n%s\r\n", len(lookalike), lookalike) + "3\r\nx-m\r\n0\r\nx-ms-meta-T: 2\r\n\r\n" +
			"PUT /q HTTP/1.1\r\nx-ms-meta-b: 1\r\n\r\n",
		out: "PUT /c/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\nX-Ms-Meta-A: 1\r\n" + sent("A") + "\r\n" +
			fmt.Sprintf("%x;ext=1\r\n%s\r\n", len(lookalike), lookalike) + "3\r\nx-m\r\n0\r\nx-ms-meta-T: 2\r\n\r\n" +
			"PUT /q HTTP/1.1\r\nx-ms-meta-b: 1\r\n" + sent("b") + "\r\n",
	},
	{
		name: "HTTP/1.0 ignores Transfer-Encoding; bare line feeds; empty lines after a POST",
		in: "POST /c/b HTTP/1.0\nTransfer-Encoding: chunked\nContent-Length: 4\nx-ms-meta-Z: 1\n\nabcd\r\n" +
			"PUT /q HTTP/1.1\r\nx-ms-meta-y: 1\r\n\r\n",
		out: "POST /c/b HTTP/1.0\nTransfer-Encoding: chunked\nContent-Length: 4\nx-ms-meta-Z: 1\n" + sent("Z") + "\nabcd\r\n" +
			"PUT /q HTTP/1.1\r\nx-ms-meta-y: 1\r\n" + sent("y") + "\r\n",
	},
	{
		name: "a malformed length: nothing more is added",
		in:   "PUT /c/b HTTP/1.1\r\nContent-Length: +4\r\nx-ms-meta-Z: 1\r\n\r\n+abc",
		out:  "PUT /c/b HTTP/1.1\r\nContent-Length: +4\r\nx-ms-meta-Z: 1\r\n\r\n+abc",
	},
}

// TestStreams feeds each stream whole, a byte at a time and in reads of
// every size up to 64, as a connection may deliver it: what the server
// reads is the same every time.
func TestStreams(t *testing.T) {
	for _, s := range streams {
		sizes := []int{len(s.in), 1}
		for n := 2; n <= 64; n++ {
			sizes = append(sizes, n)
		}
		for _, size := range sizes {
			var p parser
			var got bytes.Buffer
			for in := []byte(s.in); len(in) > 0; {
				k := min(size, len(in))
				// feed may rewrite its argument's buffer's owner only
				// through its result: pass a copy, as Read's b is the
				// server's buffer.
				chunk := bytes.Clone(in[:k])
				out, added := p.feed(chunk)
				if added {
					got.Write(out)
				} else {
					got.Write(chunk)
				}
				in = in[k:]
			}
			if got.String() != s.out {
				t.Errorf("%s, reads of %d bytes:\n got %q\nwant %q", s.name, size, got.String(), s.out)
				break
			}
		}
	}
}

// TestNoMetadataIsNotCopied: a read without a metadata line is handed on
// as it came.
func TestNoMetadataIsNotCopied(t *testing.T) {
	var p parser
	in := []byte(streams[0].in + "PUT /c/b HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd")
	if out, added := p.feed(in); added || out != nil {
		t.Fatalf("feed added lines to a stream without metadata: %q", out)
	}
	if allocs := testing.AllocsPerRun(100, func() { p.feed(in) }); allocs != 0 {
		t.Errorf("feed allocates %.0f times a read without metadata, want 0", allocs)
	}
}

// TestServer sends pipelined requests to Go's HTTP server through Listen,
// reading the server's buffer in small pieces (the kernel delivers the
// writes as it will): the handler sees each metadata name as sent, and
// each body as sent.
func TestServer(t *testing.T) {
	type seen struct {
		names []string
		body  string
	}
	got := make(chan seen, 10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var s seen
		for k := range r.Header {
			if strings.HasPrefix(k, "X-Ms-Meta-") {
				s.names = append(s.names, Name(r.Header, k))
			}
		}
		sort.Strings(s.names)
		b, _ := io.ReadAll(r.Body)
		s.body = string(b)
		got <- s
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(Listen(ln))
	t.Cleanup(func() { srv.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reqs := "PUT /c/b HTTP/1.1\r\nHost: h\r\nContent-Length: " + fmt.Sprint(len(lookalike)) + "\r\nx-ms-meta-owner: a\r\nx-ms-meta-MixedCase: b\r\n\r\n" + lookalike +
		"PUT /c/b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-MS-META-Chunked: 2\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(lookalike), lookalike) +
		"GET /c HTTP/1.1\r\nHost: h\r\nX-Ms-Meta-NoCase: 3\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 100)+"\r\n", 60) + "\r\n" +
		"GET /c HTTP/1.1\r\nHost: h\r\n\r\n"
	// One write holds every request; a writer splits it at odd places.
	go func() {
		for b := []byte(reqs); len(b) > 0; {
			k := min(7, len(b))
			if _, err := c.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
		}
	}()
	want := []seen{
		{[]string{"MixedCase", "owner"}, lookalike},
		{[]string{"Chunked"}, lookalike},
		{[]string{"NoCase"}, ""},
		{nil, ""},
	}
	r := bufio.NewReader(c)
	for i, w := range want {
		select {
		case s := <-got:
			if fmt.Sprint(s.names) != fmt.Sprint(w.names) || s.body != w.body {
				t.Errorf("request %d: the handler saw names %q, body %q; want %q, %q", i, s.names, s.body, w.names, w.body)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d: the handler saw nothing in 10 s", i)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("request %d: status %d", i, resp.StatusCode)
		}
	}
}

// A Put Message's head as azqueue sends it, and its body.
const putMessage = "POST /devstoreaccount1/q/messages HTTP/1.1\r\nHost: 127.0.0.1:41234\r\nUser-Agent: azsdk-go-azqueue/v1.0.1 (go1.26.8; linux)\r\n" +
	"Content-Length: 94\r\nAccept: application/xml\r\nAuthorization: SharedKey devstoreaccount1:0123456789abcdefghijklmnopqrstuvwxyzABCDEFG=\r\n" +
	"Content-Type: application/xml\r\nX-Ms-Client-Request-Id: 6f8a5c2e-1f1e-4a86-7d3b-3c0d9f0e2a11\r\nX-Ms-Date: Sat, 28 Nov 2026 02:21:08 GMT\r\n" +
	"X-Ms-Version: 2018-03-28\r\nAccept-Encoding: gzip\r\n\r\n" +
	"<QueueMessage><MessageText>{&quot;v&quot;:1,&quot;id&quot;:&quot;x&quot;}</MessageText></QueueMessage>"

// BenchmarkFeed is the reader's cost per request: a Put Message without
// metadata (the common case) and a Create Queue with two names.
func BenchmarkFeed(b *testing.B) {
	withMeta := strings.Replace(putMessage, "Accept-Encoding", "x-ms-meta-owner: a\r\nx-ms-meta-MixedCase: b\r\nAccept-Encoding", 1)
	for _, c := range []struct{ name, req string }{{"none", putMessage}, {"two-names", withMeta}} {
		b.Run(c.name, func(b *testing.B) {
			var p parser
			in := []byte(c.req)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for range b.N {
				p.feed(in)
			}
		})
	}
}
