package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tablekit/tablekit/emulator"
)

// sendHead sends head (a request's line and headers, without the blank
// line) to the service at base and returns the connection and a reader of
// it; the body is the caller's to send, or not.
func sendHead(t *testing.T, base, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+"Host: "+u.Host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// TestUnauthenticatedBodyUnread: a request that is not authenticated is
// answered from its head alone, on every operation of the three services
// that takes a body (and on those Azure has and the emulator leaves out):
// with a bad key, the answer (403) comes although none of the body is
// sent, whether it announces 4 MiB or 1,000 bytes (which the server would
// otherwise wait for, to discard), and the server closes the connection
// rather than read it. Without credentials the answer is 401, as soon.
func TestUnauthenticatedBodyUnread(t *testing.T) {
	t.Parallel()
	em := emulator.StartTB(t, &emulator.Options{})
	a := "/" + em.AccountName
	badKey := "Authorization: SharedKey " + em.AccountName + ":" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\r\nx-ms-date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\nx-ms-version: 2021-12-02\r\n"
	const (
		json = "Content-Type: application/json\r\n"
		xml  = "Content-Type: application/xml\r\n"
	)
	// Each operation: its service, request line (method and target) and
	// headers other than credentials and length.
	ops := []struct{ name, base, line, headers string }{
		{"create table", em.TableURL, "POST " + a + "/Tables", json},
		{"insert entity", em.TableURL, "POST " + a + "/t1", json},
		{"update entity", em.TableURL, "PUT " + a + "/t1(PartitionKey='a',RowKey='b')", json + "If-Match: *\r\n"},
		{"insert or replace entity", em.TableURL, "PUT " + a + "/t1(PartitionKey='a',RowKey='b')", json},
		{"merge entity", em.TableURL, "MERGE " + a + "/t1(PartitionKey='a',RowKey='b')", json + "If-Match: *\r\n"},
		{"insert or merge entity", em.TableURL, "MERGE " + a + "/t1(PartitionKey='a',RowKey='b')", json},
		{"merge entity through POST", em.TableURL, "POST " + a + "/t1(PartitionKey='a',RowKey='b')", json + "X-HTTP-Method: MERGE\r\nIf-Match: *\r\n"},
		{"table batch", em.TableURL, "POST " + a + "/$batch", "Content-Type: multipart/mixed; boundary=batch_1\r\n"},
		{"set table ACL", em.TableURL, "PUT " + a + "/t1?comp=acl", xml},
		{"set table service properties", em.TableURL, "PUT " + a + "/?restype=service&comp=properties", xml},
		{"put message", em.QueueURL, "POST " + a + "/queue1/messages", xml},
		{"update message", em.QueueURL, "PUT " + a + "/queue1/messages/0a1b2c3d-0000-0000-0000-000000000000?popreceipt=AAAAAA&visibilitytimeout=0", xml},
		{"create queue", em.QueueURL, "PUT " + a + "/queue1", ""},
		{"set queue metadata", em.QueueURL, "PUT " + a + "/queue1?comp=metadata", ""},
		{"set queue ACL", em.QueueURL, "PUT " + a + "/queue1?comp=acl", xml},
		{"set queue service properties", em.QueueURL, "PUT " + a + "/?restype=service&comp=properties", xml},
		{"put blob", em.BlobURL, "PUT " + a + "/cont1/b1", "x-ms-blob-type: BlockBlob\r\n"},
		{"put block", em.BlobURL, "PUT " + a + "/cont1/b1?comp=block&blockid=YQ%3D%3D", ""},
		{"put block list", em.BlobURL, "PUT " + a + "/cont1/b1?comp=blocklist", xml},
		{"append block", em.BlobURL, "PUT " + a + "/cont1/b1?comp=appendblock", ""},
		{"set container ACL", em.BlobURL, "PUT " + a + "/cont1?restype=container&comp=acl", xml},
		{"set blob service properties", em.BlobURL, "PUT " + a + "/?restype=service&comp=properties", xml},
		{"set blob tags", em.BlobURL, "PUT " + a + "/cont1/b1?comp=tags", xml},
		{"put page", em.BlobURL, "PUT " + a + "/cont1/b1?comp=page", "x-ms-page-write: update\r\nx-ms-range: bytes=0-511\r\n"},
		{"get user delegation key", em.BlobURL, "POST " + a + "/?restype=service&comp=userdelegationkey", xml},
		{"blob batch", em.BlobURL, "POST " + a + "/?comp=batch", "Content-Type: multipart/mixed; boundary=batch_1\r\n"},
		{"container blob batch", em.BlobURL, "POST " + a + "/cont1?restype=container&comp=batch", "Content-Type: multipart/mixed; boundary=batch_1\r\n"},
	}
	type tc struct {
		name, base, head string
		status           int
	}
	var cases []tc
	for _, op := range ops {
		head := op.line + " HTTP/1.1\r\n" + op.headers
		cases = append(cases,
			tc{op.name + ", bad key, 4 MiB", op.base, head + badKey + "Content-Length: 4194304\r\n", http.StatusForbidden},
			tc{op.name + ", bad key, 1000 bytes", op.base, head + badKey + "Content-Length: 1000\r\n", http.StatusForbidden})
	}
	for _, op := range ops[:3] {
		cases = append(cases, tc{op.name + ", no credentials", op.base, op.line + " HTTP/1.1\r\n" + op.headers + "Content-Length: 4194304\r\n", http.StatusUnauthorized})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn, br := sendHead(t, c.base, c.head)
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer before the body: %v", err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d", res.StatusCode, c.status)
			}
			// The body was not read: the connection ends here, at once.
			conn.SetDeadline(time.Now().Add(2 * time.Second))
			if n, err := br.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("connection kept open after an unread body (read %d bytes, %v)", n, err)
			}
		})
	}
}

// accountSAS is an account SAS (blob service) for em, all permissions.
func accountSAS(t *testing.T, em *emulator.Instance) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(em.AccountName, em.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   (&sas.AccountPermissions{Read: true, Write: true, Create: true, List: true, Add: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

// TestTrickledBodyCut: a body sent a byte at a time, far below the rate
// Azure allows a write (a MiB per 10 minutes), is cut once the grace is
// over (made 300 ms here, 30 s by default): the client gets 500
// OperationTimedOut and the connection is closed.
func TestTrickledBodyCut(t *testing.T) {
	t.Parallel()
	o := &emulator.Options{}
	emulator.SetGrace(o, 300*time.Millisecond)
	em := emulator.StartTB(t, o)
	conn, br := sendHead(t, em.BlobURL, "PUT /"+em.AccountName+"/cont1/b1?comp=block&blockid=YQ%3D%3D&"+accountSAS(t, em)+" HTTP/1.1\r\nContent-Length: 100000\r\n")
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body after %v: %v", time.Since(start), err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the trickle was cut after %v; want about the grace (300ms)", took)
	}
	if res.StatusCode != http.StatusInternalServerError || !bytes.Contains(body, []byte("OperationTimedOut")) {
		t.Fatalf("answer %d %s, want 500 OperationTimedOut", res.StatusCode, body)
	}
	if _, err := br.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection kept open after a cut body")
	}
}

// TestHeaderLimits: a target over 32 KiB is 414 and a head over 64 KiB
// is 431, before any service sees them.
func TestHeaderLimits(t *testing.T) {
	t.Parallel()
	em := emulator.StartTB(t, &emulator.Options{})
	cases := []struct {
		name, head string
		status     int
	}{
		{"long URL", "GET /" + em.AccountName + "/t1?x=" + strings.Repeat("a", 33<<10) + " HTTP/1.1\r\n", http.StatusRequestURITooLong},
		{"many headers", "GET /" + em.AccountName + "/t1 HTTP/1.1\r\n" + strings.Repeat("x-a: b\r\n", 10000), http.StatusRequestHeaderFieldsTooLarge},
		{"within the limits", "GET /" + em.AccountName + "/t1?x=" + strings.Repeat("a", 30<<10) + " HTTP/1.1\r\n" + strings.Repeat("x-a: b\r\n", 1000), http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn, br := sendHead(t, em.TableURL, c.head)
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d", res.StatusCode, c.status)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the servers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRequestLogKeepsNoSecret: requests signed with the account key (Shared
// Key), with a SAS and with a bearer token are logged, a line each, with
// their status and error code, and neither log (nor the debug log with
// its headers) holds the key, the signature or the token.
func TestRequestLogKeepsNoSecret(t *testing.T) {
	t.Parallel()
	var lg, debug syncBuffer
	em := emulator.StartTB(t, &emulator.Options{Log: &lg, DebugLog: &debug})
	ctx := context.Background()

	// Shared Key, through the SDK: a table created, then one that is
	// not there.
	svc, err := aztables.NewServiceClientFromConnectionString(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(ctx, "logged", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeleteTable(ctx, "notthere", nil); err == nil {
		t.Fatal("deleting a missing table succeeded")
	}
	// A SAS, on the Blob service.
	token := accountSAS(t, em)
	sig, err := url.ParseQuery(token)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(em.BlobURL + "?comp=list&" + token)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("list containers with a SAS: %d", res.StatusCode)
	}
	// A bearer token, on the Queue service.
	const bearer = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJsb2ctdGVzdCJ9.c2VjcmV0LXNpZ25hdHVyZQ"
	req, _ := http.NewRequest(http.MethodGet, em.QueueURL+"?comp=list", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("x-ms-version", "2021-12-02")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	out := lg.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a line per request (4), got %d:\n%s", len(lines), out)
	}
	for _, want := range []string{
		" table 127.0.0.1 POST /" + em.AccountName + "/Tables 201 - ",
		" table 127.0.0.1 DELETE /" + em.AccountName + "/Tables('notthere') 404 ResourceNotFound ",
		" blob 127.0.0.1 GET /" + em.AccountName + "?comp=list&",
		" queue 127.0.0.1 GET /" + em.AccountName + "?comp=list ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(debug.String(), "Authorization: Bearer REDACTED") || !strings.Contains(debug.String(), "Authorization: SharedKeyLite REDACTED") {
		t.Errorf("the debug log does not show the redacted credentials:\n%s", debug.String())
	}
	key, _ := base64.StdEncoding.DecodeString(em.AccountKey)
	secrets := map[string]string{
		"account key":         em.AccountKey,
		"account key, raw":    string(key),
		"SAS signature":       sig.Get("sig"),
		"SAS signature, sent": url.QueryEscape(sig.Get("sig")),
		"bearer token":        bearer,
	}
	for name, log := range map[string]string{"request log": out, "debug log": debug.String()} {
		for what, s := range secrets {
			if strings.Contains(log, s) {
				t.Errorf("the %s holds the %s", name, what)
			}
		}
	}
}

// TestBodyLengthMismatch: a body is its Content-Length's bytes. One
// longer has its surplus read as the next request on the connection,
// which the server refuses (400) and closes; one shorter, its sender done,
// is 400 InvalidInput, not stored. An upload without a length (chunked)
// is 411 MissingContentLengthHeader, as Azure requires the length.
func TestBodyLengthMismatch(t *testing.T) {
	t.Parallel()
	em := emulator.StartTB(t, &emulator.Options{})
	token := accountSAS(t, em)
	block := "PUT /" + em.AccountName + "/lengths/b1?comp=block&blockid=YQ%3D%3D&" + token + " HTTP/1.1\r\n"
	c, br := sendHead(t, em.BlobURL, "PUT /"+em.AccountName+"/lengths?restype=container&"+token+" HTTP/1.1\r\nContent-Length: 0\r\n")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("create container: %v %v", res, err)
	}

	t.Run("longer", func(t *testing.T) {
		c, br := sendHead(t, em.BlobURL, block+"Content-Length: 5\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "abcde"+"surplus\r\n\r\n")
		var got []int
		for {
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			got = append(got, res.StatusCode)
		}
		if len(got) != 2 || got[0] != http.StatusCreated || got[1] != http.StatusBadRequest {
			t.Fatalf("answers %v, want [201 400]: the block of its 5 bytes, then the surplus refused", got)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		c, br := sendHead(t, em.BlobURL, block+"Transfer-Encoding: chunked\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "5\r\nabcde\r\n0\r\n\r\n")
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusLengthRequired || res.Header.Get("x-ms-error-code") != "MissingContentLengthHeader" {
			t.Fatalf("status %d %s, want 411 MissingContentLengthHeader", res.StatusCode, res.Header.Get("x-ms-error-code"))
		}
	})
	t.Run("shorter", func(t *testing.T) {
		c, br := sendHead(t, em.BlobURL, block+"Content-Length: 10\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "abc")
		c.(*net.TCPConn).CloseWrite()
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", res.StatusCode)
		}
	})
}

// TestStalledBodyCut: a body that comes fast and then stops is cut once
// no byte has come for the stall time (made 300 ms here, 2 minutes by
// default), though what came before would buy it minutes at Azure's
// rate.
func TestStalledBodyCut(t *testing.T) {
	t.Parallel()
	o := &emulator.Options{}
	emulator.SetGrace(o, 300*time.Millisecond)
	em := emulator.StartTB(t, o)
	conn, br := sendHead(t, em.BlobURL, "PUT /"+em.AccountName+"/cont1/b1?comp=block&blockid=YQ%3D%3D&"+accountSAS(t, em)+" HTTP/1.1\r\nContent-Length: 200000\r\n")
	start := time.Now()
	// 100,000 bytes at once: 57 s at a MiB per 10 minutes.
	if _, err := conn.Write(bytes.Repeat([]byte("x"), 100000)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body after %v: %v", time.Since(start), err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the stalled body was cut after %v; want about the stall time (300ms)", took)
	}
	if res.StatusCode != http.StatusInternalServerError || !bytes.Contains(body, []byte("OperationTimedOut")) {
		t.Fatalf("answer %d %s, want 500 OperationTimedOut", res.StatusCode, body)
	}
}
