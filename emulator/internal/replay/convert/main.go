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
//	go run ./emulator/internal/replay/convert -git REPO.git \
//		-sources emulator/testdata/recordings/python-storage/sources.txt \
//		-out emulator/testdata/recordings/python-storage
//
// A sources file names each recording as a trimmed file's Source does
// (OWNER/NAME@COMMIT PATH), one a line; -repo, -commit and PATHs on the
// command line name them instead.
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
	"encoding/json"
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
	gitDir := flag.String("git", "", "a git directory to read the recordings from, at their commit")
	dir := flag.String("dir", "", "a directory to read the recordings from (PATH under it), instead of -git")
	sources := flag.String("sources", "", "a file naming the recordings, one a line: OWNER/NAME@COMMIT PATH (a trimmed file's Source)")
	commit := flag.String("commit", "", "without -sources: the commit the PATHs are taken at")
	repo := flag.String("repo", "", "without -sources: the PATHs' repository, OWNER/NAME")
	out := flag.String("out", "", "the directory to write the trimmed recordings into")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: convert (-git DIR | -dir DIR) -out DIR (-sources FILE | -repo OWNER/NAME -commit SHA PATH...)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var list []source
	switch {
	case *sources != "" && flag.NArg() == 0:
		b, err := os.ReadFile(*sources)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if list, err = parseSources(string(b)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", *sources, err)
			os.Exit(1)
		}
	case *sources == "" && *repo != "" && *commit != "" && flag.NArg() > 0:
		for _, p := range flag.Args() {
			list = append(list, source{repo: *repo, commit: *commit, path: p})
		}
	}
	if (*gitDir == "") == (*dir == "") || *out == "" || len(list) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	read := func(src source) ([]byte, error) {
		if *gitDir != "" {
			cmd := exec.Command("git", "--git-dir", *gitDir, "cat-file", "blob", src.commit+":"+src.path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("git cat-file %s:%s: %v: %s", src.commit, src.path, err, strings.TrimSpace(stderr.String()))
			}
			return b, nil
		}
		return os.ReadFile(filepath.Join(*dir, filepath.FromSlash(src.path)))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	failed := 0
	written := map[string]string{}
	for _, src := range list {
		p := src.path
		name := strings.TrimSuffix(path.Base(p), path.Ext(p)) + ".json"
		if prev, ok := written[name]; ok {
			fmt.Fprintf(os.Stderr, "%s: refused: its name %s is %s's too\n", p, name, prev)
			failed++
			continue
		}
		b, err := read(src)
		if err == nil {
			b, err = convert(b, p, src.String())
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
	if failed > 0 && *sources != "" {
		// A list of sources is a choice already made: each must convert.
		os.Exit(1)
	}
}

// source is one recording: its repository, commit and path.
type source struct{ repo, commit, path string }

// String is the source as a trimmed file's Source names it.
func (s source) String() string { return s.repo + "@" + s.commit + " " + s.path }

// parseSources reads a list of sources, one a line as a Source names
// it (OWNER/NAME@COMMIT PATH); blank lines and lines from # on are
// comments.
func parseSources(text string) ([]source, error) {
	var list []source
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rc, p, ok := strings.Cut(line, " ")
		r, c, ok2 := strings.Cut(rc, "@")
		if !ok || !ok2 || r == "" || c == "" || strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("line %d: %q is not OWNER/NAME@COMMIT PATH", i+1, line)
		}
		list = append(list, source{repo: r, commit: c, path: strings.TrimSpace(p)})
	}
	return list, nil
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
		rec.Note = "The test's setUp created what Setup names before the recording began; the replay creates it first."
	}
	return replay.Marshal(rec)
}

// resourcePath is a service URI's account endpoint and its first path
// segment: a container, a queue, or a table (with its key or query
// parentheses, which resource drops).
var resourcePath = regexp.MustCompile(`^(https?://[A-Za-z0-9-]+\.(blob|queue|table)\.core\.windows\.net)/([^/?()]+)`)

// fixtures are the containers, queues and tables a session found made
// before it began, as a test's setUp makes them unrecorded: a resource
// its first request to found there (a create answered 409, anything else
// but a 404 saying the resource is missing). The Table service's own
// paths (Tables, $batch) name none.
func fixtures(entries []replay.Entry) []string {
	var setup []string
	known := map[string]bool{}
	for _, e := range entries {
		m := resourcePath.FindStringSubmatch(e.RequestURI)
		if m == nil {
			continue
		}
		svc, name := m[2], m[3]
		if svc == "table" && (name == "Tables" || name == "$batch") {
			if name == "Tables" && e.RequestMethod == "POST" {
				// Create Table names its table in the body.
				var body struct{ TableName string }
				if b, err := replay.DecodeBody(e.RequestBody, "application/json"); err == nil && json.Unmarshal(b, &body) == nil && body.TableName != "" {
					known[m[1]+"/"+body.TableName] = true
				}
			}
			continue
		}
		if svc == "queue" && name == "messages" {
			continue
		}
		uri := m[1] + "/" + name
		if known[uri] {
			continue
		}
		known[uri] = true
		creates := e.RequestMethod == "PUT" && (svc == "queue" && !strings.Contains(e.RequestURI, "?") ||
			svc == "blob" && strings.Contains(e.RequestURI, "restype=container") && !strings.Contains(e.RequestURI, "comp="))
		// A 404 says the resource is missing, unless the service named
		// something inside it (BlobNotFound, MessageNotFound, an
		// entity's ResourceNotFound).
		code := string(e.ResponseHeaders["x-ms-error-code"])
		if svc == "table" {
			var body struct {
				Error struct{ Code string } `json:"odata.error"`
			}
			if b, err := replay.DecodeBody(e.ResponseBody, "application/json"); err == nil && json.Unmarshal(b, &body) == nil {
				code = body.Error.Code
			}
		}
		missing := e.StatusCode == 404 && (code == "" || code == "ContainerNotFound" || code == "QueueNotFound" || code == "TableNotFound")
		if creates && e.StatusCode == 409 || !creates && !missing {
			setup = append(setup, uri)
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
