package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
)

// Azurite's four commands, run as its image's users run them (the
// arguments testcontainers-go's Azurite module passes: --SERVICEHost
// 0.0.0.0 --SERVICEPort PORT for each service it enables, and
// --inMemoryPersistence), serve only their services and print Azurite's
// own lines, word for word, on stdout; the image's healthcheck passes
// while they serve, fails once they stop.
func TestAzuriteCommands(t *testing.T) {
	cases := []struct {
		name   string
		serves []string
		want   func(ports map[string]string) []string
	}{
		{"azurite", []string{"blob", "queue", "table"}, func(ports map[string]string) []string {
			return []string{
				"Azurite Blob service is starting at http://0.0.0.0:" + ports["blob"],
				"Azurite Blob service is successfully listening at http://0.0.0.0:" + ports["blob"],
				"Azurite Queue service is starting at http://0.0.0.0:" + ports["queue"],
				"Azurite Queue service is successfully listening at http://0.0.0.0:" + ports["queue"],
				"Azurite Table service is starting at http://0.0.0.0:" + ports["table"],
				"Azurite Table service is successfully listening at http://0.0.0.0:" + ports["table"],
			}
		}},
		{"azurite-blob", []string{"blob"}, func(ports map[string]string) []string {
			return []string{
				"Azurite Blob service is starting on 0.0.0.0:" + ports["blob"],
				"Azurite Blob service successfully listens on http://0.0.0.0:" + ports["blob"],
			}
		}},
		{"azurite-queue", []string{"queue"}, func(ports map[string]string) []string {
			return []string{
				"Azurite Queue service is starting on 0.0.0.0:" + ports["queue"],
				"Azurite Queue service successfully listens on http://0.0.0.0:" + ports["queue"],
			}
		}},
		{"azurite-table", []string{"table"}, func(ports map[string]string) []string {
			return []string{
				"Azurite Table service is starting on 0.0.0.0:" + ports["table"],
				"Azurite Table service successfully started on 0.0.0.0:" + ports["table"],
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status := filepath.Join(t.TempDir(), "status.json")
			var (
				ports          map[string]string
				want           string
				stop           context.CancelFunc
				stdout, stderr *syncBuffer
				done           chan int
			)
			// The ports are probed free, then bound by the command: one
			// taken in between (another test's server or client) makes
			// the command exit with EADDRINUSE, and the case starts
			// again on other ports, three times at most.
			for attempt := 1; ; attempt++ {
				ports = map[string]string{"blob": freePortString(t), "queue": freePortString(t), "table": freePortString(t)}
				args := []string{"--inMemoryPersistence", "--status", status}
				for _, s := range []string{"blob", "queue", "table"} {
					if slices.Contains(c.serves, s) {
						args = append(args, "--"+s+"Host", "0.0.0.0")
					}
					args = append(args, "--"+s+"Port", ports[s])
				}
				var ctx context.Context
				ctx, stop = context.WithCancel(context.Background())
				defer stop()
				stdout, stderr = &syncBuffer{}, &syncBuffer{}
				done = make(chan int, 1)
				go func() {
					// As the image runs it: the binary under Azurite's name.
					done <- realMain(ctx, azuriteArgs("/usr/local/bin/"+c.name, args), strings.NewReader(""), stdout, stderr)
				}()
				want = strings.Join(c.want(ports), "\n") + "\n"
				retry := false
				for deadline := time.Now().Add(10 * time.Second); stdout.String() != want; {
					select {
					case code := <-done:
						if attempt < 3 && strings.Contains(stderr.String(), "address already in use") {
							t.Logf("a port was taken before the command bound it (attempt %d): %s", attempt, stderr.String())
							retry = true
						} else {
							t.Fatalf("exit %d before serving; stdout:\n%s\nwant:\n%s\nstderr: %s", code, stdout.String(), want, stderr.String())
						}
					default:
					}
					if retry {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr: %s", stdout.String(), want, stderr.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
				if !retry {
					break
				}
			}
			for s, port := range ports {
				conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second)
				if conn != nil {
					conn.Close()
				}
				if listens := err == nil; listens != slices.Contains(c.serves, s) {
					t.Errorf("the %s service's port %s listens: %v, want %v", s, port, listens, !listens)
				}
			}
			var hout, herr syncBuffer
			if code := realMain(context.Background(), []string{"emulator", "health", "--status", status}, nil, &hout, &herr); code != 0 {
				t.Fatalf("emulator health: exit %d: %s%s", code, hout.String(), herr.String())
			}
			if n := strings.Count(hout.String(), "http://"); n != len(c.serves) {
				t.Errorf("emulator health checked %d services, want %d: %s", n, len(c.serves), hout.String())
			}
			stop()
			if code := <-done; code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var closing []string
			for _, s := range c.serves {
				closing = append(closing, "Azurite "+serviceTitles[emulator.Service(s)]+" service is closing...")
			}
			for _, s := range c.serves {
				closing = append(closing, "Azurite "+serviceTitles[emulator.Service(s)]+" service successfully closed")
			}
			if got, wantClose := strings.TrimPrefix(stdout.String(), want), strings.Join(closing, "\n")+"\n"; got != wantClose {
				t.Errorf("stdout after stopping:\n%s\nwant:\n%s", got, wantClose)
			}
			if _, err := os.Stat(status); err == nil {
				t.Error("the status file is left after stopping")
			}
			if code := realMain(context.Background(), []string{"emulator", "health", "--status", status}, nil, &hout, &herr); code != 1 {
				t.Errorf("emulator health after stopping: exit %d, want 1", code)
			}
		})
	}
}

// The health check fails while a service the status file lists does not
// answer, and when no file is named.
func TestEmulatorHealthFailsOnAServiceDown(t *testing.T) {
	em := emulator.StartTB(t, &emulator.Options{Services: []emulator.Service{emulator.TableService}})
	status := filepath.Join(t.TempDir(), "status.json")
	if err := writeStatus(status, em); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	if code := realMain(context.Background(), []string{"emulator", "health", "--status", status}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	em.Stop()
	if code := realMain(context.Background(), []string{"emulator", "health", "--status", status}, nil, &out, &errb); code != 1 {
		t.Errorf("a stopped service: exit %d, want 1", code)
	}
	t.Setenv(statusEnv, "")
	if code := realMain(context.Background(), []string{"emulator", "health"}, nil, &out, &errb); code != 2 {
		t.Errorf("no status file named: exit %d, want 2", code)
	}
}

// Under Azurite's names the services follow the command, the data is in
// the current directory unless --location or --inMemoryPersistence, as
// Azurite's, and a host flag of a service not served has no say.
// tablekit emulator --services serves a list.
func TestAzuriteCommandOptions(t *testing.T) {
	cases := []struct {
		cmd, args    string
		services     []emulator.Service
		location     string
		host         string
		usageErrWant bool
	}{
		{"emulator", "", nil, "", "127.0.0.1", false},
		{"emulator", "--services table,blob", []emulator.Service{emulator.TableService, emulator.BlobService}, "", "127.0.0.1", false},
		{"emulator", "--services files", nil, "", "", true},
		{"azurite", "--blobHost 0.0.0.0 --queueHost 0.0.0.0 --tableHost 0.0.0.0", nil, ".", "0.0.0.0", false},
		{"azurite", "-l /data -s -d /tmp/debug.log", nil, "/data", "127.0.0.1", false},
		{"azurite", "--inMemoryPersistence --extentMemoryLimit 50.000000", nil, "", "127.0.0.1", false},
		{"azurite-blob", "--blobHost 0.0.0.0 --blobPort 10000", []emulator.Service{emulator.BlobService}, ".", "0.0.0.0", false},
		{"azurite-queue", "--queueHost 0.0.0.0 --tableHost 127.0.0.1", []emulator.Service{emulator.QueueService}, ".", "0.0.0.0", false},
		{"azurite-table", "--tableHost 0.0.0.0 --location /data", []emulator.Service{emulator.TableService}, "/data", "0.0.0.0", false},
		{"azurite-table", "--services blob", nil, "", "", true},
		{"azurite", "--blobHost 0.0.0.0 --tableHost 127.0.0.1", nil, "", "", true},
	}
	for _, c := range cases {
		a := &app{}
		var cmd *command
		for _, cc := range a.commands() {
			if cc.name == c.cmd {
				cmd = cc
			}
		}
		if _, err := parseInterleaved(a.flagSet(cmd), strings.Fields(c.args)); err != nil {
			t.Fatalf("%s %s: %v", c.cmd, c.args, err)
		}
		o, err := a.emu.options(func(string) string { return "" })
		if c.usageErrWant {
			if err == nil {
				t.Errorf("%s %s: no error, want a usage error", c.cmd, c.args)
			}
			continue
		}
		if err != nil || !slices.Equal(o.Services, c.services) || o.Location != c.location || o.Host != c.host {
			t.Errorf("%s %s: services %q, location %q, host %q, %v; want %q, %q, %q", c.cmd, c.args, o.Services, o.Location, o.Host, err, c.services, c.location, c.host)
		}
	}
}

func freePortString(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
