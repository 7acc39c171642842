package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator"
)

// statusEnv names the file where tablekit emulator (and Azurite's
// commands) write the services' URLs, and tablekit emulator health reads
// them, when --status does not. The emulator's image sets it, so that its
// healthcheck, which runs beside the emulator without a shell, knows what
// the container's command serves, on whatever ports.
const statusEnv = "TABLEKIT_EMULATOR_STATUS"

// emulatorStatus is the status file: the URLs of the services served,
// empty for those not served. It holds no key.
type emulatorStatus struct {
	PID   int    `json:"pid"`
	Blob  string `json:"blob,omitempty"`
	Queue string `json:"queue,omitempty"`
	Table string `json:"table,omitempty"`
}

// writeStatus writes inst's URLs to path, whole or not at all (a
// healthcheck never reads half a file).
func writeStatus(path string, inst *emulator.Instance) error {
	b, err := json.Marshal(emulatorStatus{PID: os.Getpid(), Blob: inst.BlobURL, Queue: inst.QueueURL, Table: inst.TableURL})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".status-*")
	if err != nil {
		return fmt.Errorf("--status: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("--status: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("--status: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--status: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--status: %w", err)
	}
	return nil
}

// cmdEmulatorHealth checks that every service the status file lists
// answers: a request to each (no credentials) must get an answer from
// the emulator's service (x-ms-request-id) within --timeout.
func (a *app) cmdEmulatorHealth(ctx context.Context, _ []string) error {
	path := a.emu.status
	if path == "" {
		path = os.Getenv(statusEnv)
	}
	if path == "" {
		return usagef("no status file: give --status FILE (the emulator's own --status) or set %s", statusEnv)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return exitError{code: 1, msg: fmt.Sprintf("unhealthy: %s does not exist: the emulator is not listening yet, or not started with --status or %s", path, statusEnv)}
	}
	if err != nil {
		return err
	}
	var st emulatorStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// The probe trusts whatever certificate the service presents: it
	// asks only whether the service answers, on this host, at the
	// address the emulator itself wrote.
	client := &http.Client{
		Timeout:   a.emu.healthTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
	}
	var ok []string
	for _, s := range []struct{ name, url string }{{"Blob", st.Blob}, {"Queue", st.Queue}, {"Table", st.Table}} {
		if s.url == "" {
			continue
		}
		u, err := probeURL(s.url)
		if err != nil {
			return fmt.Errorf("%s: %s URL %q: %w", path, s.name, s.url, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return exitError{code: 1, msg: fmt.Sprintf("unhealthy: the %s service: %v", s.name, err)}
		}
		resp.Body.Close()
		if resp.Header.Get("x-ms-request-id") == "" {
			return exitError{code: 1, msg: fmt.Sprintf("unhealthy: the %s service at %s answered %s without x-ms-request-id: not the emulator", s.name, u, resp.Status)}
		}
		ok = append(ok, s.name+" "+s.url)
	}
	if len(ok) == 0 {
		return exitError{code: 1, msg: fmt.Sprintf("unhealthy: %s lists no service", path)}
	}
	fmt.Fprintf(a.stdout, "healthy: %s\n", strings.Join(ok, ", "))
	return nil
}

// probeURL is the request a health check sends to the service at
// service's URL: its service properties' list (?comp=list), which each
// service answers, at the loopback address when the service listens on
// every interface.
func probeURL(service string) (string, error) {
	u, err := url.Parse(service)
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	u.Host = net.JoinHostPort(host, port)
	u.RawQuery = "comp=list"
	return u.String(), nil
}

// healthTimeoutDefault bounds each of the health check's requests: the
// image's HEALTHCHECK gives the whole check 5 s.
const healthTimeoutDefault = 2 * time.Second
