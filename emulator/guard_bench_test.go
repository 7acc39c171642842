package emulator

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkGuard: what guard (the servers' deadlines and the request log)
// adds to a request: a 1 KiB GET and a 1 KiB PUT over loopback, one at a
// time on a kept-alive connection, to a handler that does nothing else,
// bare, guarded, and guarded with a request log (to io.Discard).
//
//	go test -run '^$' -bench Guard -benchtime 20000x ./emulator/
func BenchmarkGuard(b *testing.B) {
	entity := bytes.Repeat([]byte("x"), 1024)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Write(entity)
	})
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", h},
		{"guarded", guard("table", h, &defaultTimeouts, nil)},
		{"guarded+log", guard("table", h, &defaultTimeouts, newRequestLog(io.Discard, nil))},
	} {
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			b.Run(c.name+"/"+method, func(b *testing.B) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				srv := &http.Server{Handler: c.h}
				go srv.Serve(ln)
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
				u := "http://" + ln.Addr().String() + "/devstoreaccount1/t(PartitionKey='p',RowKey='r')"
				b.ResetTimer()
				for b.Loop() {
					var body io.Reader
					if method == http.MethodPut {
						body = bytes.NewReader(entity)
					}
					req, _ := http.NewRequest(method, u, body)
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
		}
	}
}
