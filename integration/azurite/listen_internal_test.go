package azurite

import (
	"maps"
	"testing"
)

// The ports come from the lines Azurite prints once each service listens,
// however its output is cut into writes; other lines, and a service
// still starting at port 0, do not count.
func TestListenWatchReadsThePorts(t *testing.T) {
	out := "In-memory extent storage is enabled with a limit of 12052.78 MB.\n" +
		"Azurite Blob service is starting at http://127.0.0.1:0\n" +
		"Azurite Blob service is successfully listening at http://127.0.0.1:45521\n" +
		"Azurite Queue service is starting at http://127.0.0.1:0\n" +
		"Azurite Queue service is successfully listening at http://127.0.0.1:34689\n" +
		"Azurite Table service is starting at http://127.0.0.1:0\n" +
		"Azurite Table service is successfully listening at https://127.0.0.1:42947\r\n"
	want := map[string]string{"Blob": "45521", "Queue": "34689", "Table": "42947"}
	for _, size := range []int{1, 7, 64, len(out)} {
		w := &listenWatch{found: make(chan struct{})}
		for i := 0; i < len(out); i += size {
			select {
			case <-w.found:
				t.Fatalf("writes of %d bytes: found before the Table line", size)
			default:
			}
			w.Write([]byte(out[i:min(i+size, len(out))]))
		}
		select {
		case <-w.found:
		default:
			t.Fatalf("writes of %d bytes: not found", size)
		}
		if got := w.ports(); !maps.Equal(got, want) {
			t.Errorf("writes of %d bytes: ports %v, want %v", size, got, want)
		}
	}
}
