package emulator_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
)

// Options.Services serves the services it names and no other, as
// Azurite's azurite-blob, azurite-queue and azurite-table do: a service
// left out has no URL, no endpoint in the connection string, no port and
// no file in Location, which another emulator serving it may then hold.
func TestServicesServesOnlyThoseNamed(t *testing.T) {
	cases := []struct {
		name     string
		services []emulator.Service
		want     []emulator.Service
	}{
		{"default", nil, emulator.AllServices},
		{"blob", []emulator.Service{emulator.BlobService}, []emulator.Service{emulator.BlobService}},
		{"queue", []emulator.Service{emulator.QueueService}, []emulator.Service{emulator.QueueService}},
		{"table", []emulator.Service{emulator.TableService}, []emulator.Service{emulator.TableService}},
		{"table and blob", []emulator.Service{emulator.TableService, emulator.BlobService}, []emulator.Service{emulator.BlobService, emulator.TableService}},
	}
	files := map[emulator.Service]string{emulator.BlobService: "blobs.db", emulator.QueueService: "queues.db", emulator.TableService: "tables.db"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			em := emulator.StartTB(t, &emulator.Options{Services: c.services, Location: dir})
			urls := map[emulator.Service]string{emulator.BlobService: em.BlobURL, emulator.QueueService: em.QueueURL, emulator.TableService: em.TableURL}
			keys := map[emulator.Service]string{emulator.BlobService: "BlobEndpoint=", emulator.QueueService: "QueueEndpoint=", emulator.TableService: "TableEndpoint="}
			for _, s := range emulator.AllServices {
				want := slices.Contains(c.want, s)
				if got := urls[s] != ""; got != want {
					t.Errorf("%s URL %q, want served %v", s, urls[s], want)
				}
				if got := strings.Contains(em.ConnectionString, keys[s]); got != want {
					t.Errorf("%s endpoint in %q: %v, want %v", s, em.ConnectionString, got, want)
				}
				_, err := os.Stat(filepath.Join(dir, files[s]))
				if got := err == nil; got != want {
					t.Errorf("%s: %s kept: %v, want %v", s, files[s], got, want)
				}
				if want {
					// The service answers (403 or 400 without credentials,
					// as Azure's do) with the service's request id.
					resp, err := http.Get(urls[s] + "?comp=list")
					if err != nil {
						t.Fatalf("%s: %v", s, err)
					}
					resp.Body.Close()
					if resp.Header.Get("x-ms-request-id") == "" {
						t.Errorf("%s answered %s without x-ms-request-id", s, resp.Status)
					}
				}
			}
			// Another emulator serves the rest from the same location.
			var rest []emulator.Service
			for _, s := range emulator.AllServices {
				if !slices.Contains(c.want, s) {
					rest = append(rest, s)
				}
			}
			if len(rest) > 0 {
				other, err := emulator.Start(context.Background(), &emulator.Options{Services: rest, Location: dir})
				if err != nil {
					t.Fatalf("the other services on the same location: %v", err)
				}
				other.Stop()
			}
		})
	}
}

// A service left out does not listen on its port: with the default ports
// of the others chosen, nothing answers on a service's own.
func TestServicesLeftOutDoNotListen(t *testing.T) {
	port := freePort(t)
	em := emulator.StartTB(t, &emulator.Options{Services: []emulator.Service{emulator.TableService}, BlobPort: port, QueuePort: port})
	if em.BlobURL != "" || em.QueueURL != "" {
		t.Fatalf("Blob %q, Queue %q, want neither served", em.BlobURL, em.QueueURL)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
		c.Close()
		t.Fatalf("port %d (the Blob and Queue services' ports) accepts a connection", port)
	}
	u, _ := url.Parse(em.TableURL)
	if u.Port() == strconv.Itoa(port) {
		t.Fatalf("the Table service took the port the others were given")
	}
}

func TestServicesRefusesUnknownOrRepeated(t *testing.T) {
	for _, list := range [][]emulator.Service{{"file"}, {emulator.BlobService, emulator.BlobService}, {"Blob"}} {
		if em, err := emulator.Start(context.Background(), &emulator.Options{Services: list}); err == nil {
			em.Stop()
			t.Errorf("Services %q: started, want an error", list)
		}
	}
	for list, want := range map[string]int{"": 0, "blob": 1, "table, Queue": 2, "blob,queue,table": 3} {
		got, err := emulator.ParseServices(list)
		if err != nil || len(got) != want {
			t.Errorf("ParseServices(%q) = %q, %v; want %d services", list, got, err, want)
		}
	}
	for _, list := range []string{"blob,blob", "files", "blob,"} {
		if got, err := emulator.ParseServices(list); err == nil {
			t.Errorf("ParseServices(%q) = %q, want an error", list, got)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
