package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/tools/testenv"
)

// durableScript is the Python side of TestEmulatorLocationSurvivesSIGKILLPython.
const durableScript = "../../emulator/_pyinterop/durable.py"

// durableRound is what one run of `durable.py load` must have had
// acknowledged before the emulator is killed: enough transactions that
// some rewrote others' rows, and some of every other write.
var durableRound = map[string]int{"txn": 6, "msg": 1, "blob": 4, "append": 1, "leased": 1}

// durableSteps are the steps `durable.py check` runs, in order.
var durableSteps = []string{"check.transactions", "check.messages", "check.blobs", "check.append", "check.lease"}

// A user switching from Azurite, driving the emulator with the Azure SDK
// for Python and plain HTTP from outside, finds --location as durable as
// TestEmulatorLocationSurvivesSIGKILL shows it to Go: the binary, started
// with Azurite's flag names and two accounts in AZURITE_ACCOUNTS, is
// killed with SIGKILL three times while durable.py (threads writing 100-row
// transactions, messages, block blobs, appends and overwrites under a
// lease, on the second account) records every acknowledged write; each
// start resumes on the same location. After the third kill `durable.py
// check` finds every acknowledged write there, no transaction half
// applied, the lease still held; and the CORS rules the first round set
// through the SDK still allow a browser's preflight (plain HTTP) on the
// Table and Blob services, for that account only.
func TestEmulatorLocationSurvivesSIGKILLPython(t *testing.T) {
	t.Parallel()
	testenv.Tier(t, testenv.TierPython)
	py := testenv.Python(t)
	script, err := filepath.Abs(durableScript)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state.jsonl")
	key1 := base64.StdEncoding.EncodeToString([]byte("durable account one key"))
	key2 := base64.StdEncoding.EncodeToString([]byte("durable account two key"))
	env := []string{emulator.AccountsEnv + "=account1:" + key1 + ";account2:" + key2}
	// Azurite's command line, as a user switching from it writes it.
	args := []string{"--location", filepath.Join(dir, "data"), "--blobPort", "0", "--queuePort", "0", "--tablePort", "0", "--silent", "--disableTelemetry"}
	binary(t) // built before the clock starts
	start := time.Now()

	const rounds = 3
	for round := range rounds {
		roundStart := time.Now()
		emu, s := startEmulatorArgs(t, env, args...)
		conn := connectionStringOf(s.ConnectionString, "account2", key2)
		load, out := startDurable(t, py, script, conn, "load", state)
		exited := make(chan error, 1)
		go func() { exited <- load.Wait() }()

		deadline := time.Now().Add(30 * time.Second)
		var counts map[string]int
		for {
			counts = durableCounts(t, state, round)
			if enough(counts) || time.Now().After(deadline) {
				break
			}
			select {
			case err := <-exited:
				t.Fatalf("round %d: durable.py load ended before the kill (%v), with %v acknowledged\n%s", round, err, counts, out)
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := emu.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		emu.Wait()
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("round %d: durable.py load: %v\n%s", round, err, out)
			}
		case <-time.After(20 * time.Second):
			load.Process.Kill()
			t.Fatalf("round %d: durable.py load still runs 20 s after the emulator was killed\n%s", round, out)
		}
		if !enough(counts) {
			t.Fatalf("round %d: only %v acknowledged in 30 s, want at least %v\n%s", round, counts, durableRound, out)
		}
		t.Logf("round %d: killed with %v acknowledged (%v)", round, counts, time.Since(roundStart).Round(time.Millisecond))
	}

	_, s := startEmulatorArgs(t, env, args...)
	conn := connectionStringOf(s.ConnectionString, "account2", key2)
	checkStart := time.Now()
	check, out := startDurable(t, py, script, conn, "check", state)
	err = check.Wait()
	t.Logf("durable.py check ran in %v", time.Since(checkStart).Round(time.Millisecond))
	if code := check.ProcessState.ExitCode(); err != nil && code != 1 {
		t.Fatalf("durable.py check: %v\n%s", err, out)
	}
	for _, st := range testenv.PySteps(t, "durable.py check", out.Stdout.Bytes(), out.Stderr.Bytes(), check.ProcessState.ExitCode(), durableSteps) {
		if st.OK {
			t.Logf("%s: %s", st.Step, st.Saw)
		}
		// The load must have had what the check looks for: transactions
		// rewriting others' rows, blobs kept in files of their own.
		var saw struct{ Rewrote, Over64KiB int }
		switch {
		case st.Step == "check.transactions" && (json.Unmarshal(st.Saw, &saw) != nil || saw.Rewrote == 0):
			t.Errorf("check.transactions saw %s: no acknowledged transaction rewrote another's rows", st.Saw)
		case st.Step == "check.blobs" && (json.Unmarshal(st.Saw, &saw) != nil || saw.Over64KiB == 0):
			t.Errorf("check.blobs saw %s: no blob past 64 KiB (in a file of its own) was acknowledged", st.Saw)
		}
	}

	// The CORS rule the first round set through the SDK, kept on disk:
	// a browser's preflight is allowed on account2's Table and Blob
	// services; another origin is not, nor the same origin on account1,
	// which set no rule.
	const origin = "https://durable.example"
	second, first := endpoints(conn), endpoints(s.ConnectionString)
	for _, c := range []struct {
		url, origin string
		allowed     bool
	}{
		{second["TableEndpoint"] + "/durable", origin, true},
		{second["BlobEndpoint"] + "/durable/leased", origin, true},
		{second["BlobEndpoint"] + "/durable/leased", "https://other.example", false},
		{first["TableEndpoint"] + "/durable", origin, false},
	} {
		req, err := http.NewRequest(http.MethodOptions, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", c.origin)
		req.Header.Set("Access-Control-Request-Method", "PUT")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("Access-Control-Allow-Origin")
		switch {
		case c.allowed && (resp.StatusCode != http.StatusOK || got != c.origin):
			t.Errorf("preflight OPTIONS %s from %s after the restarts: %d, Access-Control-Allow-Origin %q; want 200 and the origin (the rule set before the kills)", c.url, c.origin, resp.StatusCode, got)
		case !c.allowed && (resp.StatusCode != http.StatusForbidden || got != ""):
			t.Errorf("preflight OPTIONS %s from %s: %d, Access-Control-Allow-Origin %q; want 403 (no rule allows it)", c.url, c.origin, resp.StatusCode, got)
		}
	}
	t.Logf("%d SIGKILLs, the check and the preflights in %v", rounds, time.Since(start).Round(time.Millisecond))
}

// startDurable starts durable.py mode state on the account of conn.
func startDurable(t *testing.T, py, script, conn, mode, state string) (*exec.Cmd, *testenv.PyOutput) {
	t.Helper()
	cmd, out := testenv.PyCommand(t, py, script, []string{"TABLEKIT_CONNECTION_STRING=" + conn}, mode, state)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s %s: %v", py, durableScript, err)
	}
	return cmd, out
}

// durableCounts counts the writes of each kind that the state file says
// were acknowledged in round (its complete lines after that round's
// start).
func durableCounts(t *testing.T, state string, round int) map[string]int {
	t.Helper()
	data, err := os.ReadFile(state)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	counts := map[string]int{}
	in := false
	lines := bytes.Split(data, []byte("\n"))
	for _, line := range lines[:len(lines)-1] { // the last is incomplete or empty
		var a struct {
			K     string `json:"k"`
			Round int    `json:"round"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("%s: a line that is not JSON (%v): %s", state, err, line)
		}
		if a.K == "round" {
			in = a.Round == round
		} else if in {
			counts[a.K]++
		}
	}
	return counts
}

// enough reports whether counts reach durableRound.
func enough(counts map[string]int) bool {
	for k, n := range durableRound {
		if counts[k] < n {
			return false
		}
	}
	return true
}

// connectionStringOf turns the connection string of an emulator's first
// account into that of its account name, with key: as
// emulator.Instance.ConnectionStringFor builds it (`tablekit emulator
// --json` prints the first account's only).
func connectionStringOf(first, name, key string) string {
	var out []string
	for _, kv := range strings.Split(strings.TrimSuffix(first, ";"), ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "AccountName":
			v = name
		case "AccountKey":
			v = key
		case "BlobEndpoint", "QueueEndpoint", "TableEndpoint":
			v = v[:strings.LastIndex(v, "/")+1] + name
		}
		out = append(out, k+"="+v)
	}
	return strings.Join(out, ";") + ";"
}

// endpoints returns a connection string's fields by name.
func endpoints(conn string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(conn, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
