// Command convert turns the Azure SDKs' recordings of real storage
// accounts into the trimmed recordings TestReplay replays
// (emulator/testdata/recordings; its README says which were taken, from
// where, and what trimming drops).
//
// It reads the test proxy's JSON (the Go, .NET and newer Python SDKs'
// recordings) and vcrpy's YAML (the older Python SDKs'), from a bare git
// directory at a commit (-git, as a fetched snapshot is) or from files
// (-dir), and writes one trimmed file per recording into -out, named as
// the recording is, with ".json":
//
//	go run ./emulator/internal/replay/convert -git REPO.git -commit SHA \
//		-repo Azure/azure-storage-python -out emulator/testdata/recordings/python-storage \
//		tests/recordings/test_queue.test_update_message.yaml ...
//
// A recording it cannot replay faithfully is refused, with the reason,
// and the others are still written: one that was not made on a real
// account (no Windows-Azure server answered), one whose requests carry a
// shared access signature (the replay signs every request again with
// the target's key, and a SAS cannot be), one that reaches a host other
// than a storage service (a token endpoint).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tablekit/tablekit/emulator/internal/replay"
)

func main() {
	gitDir := flag.String("git", "", "a git directory to read the recordings from, at -commit")
	commit := flag.String("commit", "", "the commit of -git (and of -repo) the recordings are taken at")
	dir := flag.String("dir", "", "a directory to read the recordings from, instead of -git")
	repo := flag.String("repo", "", "the recordings' repository, owner/name, for each file's Source")
	out := flag.String("out", "", "the directory to write the trimmed recordings into")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: convert (-git DIR | -dir DIR) -commit SHA -repo OWNER/NAME -out DIR PATH...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if (*gitDir == "") == (*dir == "") || *commit == "" || *repo == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	read := func(p string) ([]byte, error) {
		if *gitDir != "" {
			cmd := exec.Command("git", "--git-dir", *gitDir, "cat-file", "blob", *commit+":"+p)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("git cat-file %s:%s: %v: %s", *commit, p, err, strings.TrimSpace(stderr.String()))
			}
			return b, nil
		}
		return os.ReadFile(filepath.Join(*dir, filepath.FromSlash(p)))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	failed := 0
	written := map[string]string{}
	for _, p := range flag.Args() {
		name := strings.TrimSuffix(strings.TrimSuffix(path.Base(p), path.Ext(p)), ".pyTestStorage") + ".json"
		if prev, ok := written[name]; ok {
			fmt.Fprintf(os.Stderr, "%s: refused: its name %s is %s's too\n", p, name, prev)
			failed++
			continue
		}
		b, err := read(p)
		if err == nil {
			b, err = convert(b, p, *repo+"@"+*commit+" "+p)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: refused: %v\n", p, err)
			failed++
			continue
		}
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		written[name] = p
	}
	fmt.Fprintf(os.Stderr, "%d written, %d refused\n", len(written), failed)
}

// convert reads one recording in its format (by p's extension) and
// returns it trimmed, in this repository's form.
func convert(b []byte, p, source string) ([]byte, error) {
	var entries []replay.Entry
	var err error
	switch path.Ext(p) {
	case ".yaml", ".yml":
		entries, err = readVCR(b)
	case ".json":
		entries, err = replay.ReadTestProxy(b)
	default:
		err = fmt.Errorf("neither test-proxy JSON nor vcrpy YAML")
	}
	if err != nil {
		return nil, err
	}
	if err := replayable(entries); err != nil {
		return nil, err
	}
	for i := range entries {
		replay.Trim(&entries[i])
	}
	rec := &replay.Recording{Source: source, Entries: entries, Setup: fixtures(entries)}
	if len(rec.Setup) > 0 {
		rec.Note = "The test's setUp created its container before the recording began; the replay creates it first (Setup)."
	}
	return replay.Marshal(rec)
}

// blobPath is a Blob service URI's container, and what follows it.
var blobPath = regexp.MustCompile(`^(https?://[A-Za-z0-9-]+\.blob\.core\.windows\.net)/([^/?]+)`)

// fixtures are the containers a session found made before it began: a
// container its first request to it found there (a create answered 409,
// anything else not 404), as a test's setUp makes it unrecorded.
func fixtures(entries []replay.Entry) []string {
	var setup []string
	known := map[string]bool{}
	for _, e := range entries {
		m := blobPath.FindStringSubmatch(e.RequestURI)
		if m == nil || known[m[2]] {
			continue
		}
		known[m[2]] = true
		creates := e.RequestMethod == "PUT" && strings.Contains(e.RequestURI, "restype=container") &&
			!strings.Contains(e.RequestURI, "comp=")
		if creates && e.StatusCode == 409 || !creates && e.StatusCode != 404 {
			setup = append(setup, m[1]+"/"+m[2]+"?restype=container")
		}
	}
	return setup
}

// storageHost is a storage service's host as the SDKs' recorders leave
// it (the account name may be sanitized).
// A secondary location's host (ACCOUNT-secondary) is not one: the
// emulator serves primary endpoints.
var storageHost = regexp.MustCompile(`^https?://[A-Za-z0-9]+\.(table|queue|blob)\.core\.windows\.net(:443)?(/|$)`)

// sasQuery is a shared access signature in a query.
var sasQuery = regexp.MustCompile(`[?&]sig=`)

// errNotReal says a recording was not answered by Azure Storage.
var errNotReal = errors.New("no answer from Azure Storage (Server: Windows-Azure-...): not a real account's recording")

// replayable checks that entries are a real account's session the replay
// can send again.
func replayable(entries []replay.Entry) error {
	real := false
	for i := range entries {
		e := &entries[i]
		if !storageHost.MatchString(e.RequestURI) {
			return fmt.Errorf("entry %d: %s is not a Table, Queue or Blob service's URL", i, e.RequestURI)
		}
		if sasQuery.MatchString(e.RequestURI) {
			return fmt.Errorf("entry %d: a shared access signature, which the replay cannot sign again", i)
		}
		for k, v := range e.RequestHeaders {
			if sasQuery.MatchString(v) {
				return fmt.Errorf("entry %d: a shared access signature in %s, which the replay cannot sign again", i, k)
			}
		}
		if body, _ := replay.DecodeBody(e.RequestBody, requestContentType(e.RequestHeaders)); bytes.Contains(bytes.ToLower(body), []byte("\nauthorization:")) {
			// A blob batch's sub-requests are signed one by one, and
			// the recorder left their signatures in the body.
			return fmt.Errorf("entry %d: a signature in the body, which the replay cannot sign again (and which is not to be kept)", i)
		}
		for k, v := range e.ResponseHeaders {
			if strings.EqualFold(k, "Server") && strings.HasPrefix(string(v), "Windows-Azure-") {
				real = true
			}
		}
	}
	if !real {
		return errNotReal
	}
	return nil
}
