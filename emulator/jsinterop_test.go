package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The JS SDK interop test: any language's SDK must be able to point at the
// emulator. _jsinterop/interop.mjs drives the Azure SDK for JavaScript
// (data-tables, storage-queue and storage-blob, pinned by its
// package-lock.json) through tables, entities of every EDM type, queries
// with paging, transactions, queues and blobs, and prints what it saw, one
// JSON line per step; this test asserts every step, on the emulator and on
// Azurite, the control: a step that passes on Azurite and fails on the
// emulator is an emulator bug, and the test says so.

// jsInteropDir is the npm project, under a directory Go tooling does not walk.
const jsInteropDir = "_jsinterop"

// jsInstall is the command that installs the pinned SDK, from the
// repository's root (make test runs it).
const jsInstall = "npm ci --prefix emulator/_jsinterop --no-audit --no-fund"

// jsStep is one line of interop.mjs's output.
type jsStep struct {
	Step     string          `json:"step"`
	Request  string          `json:"request"`
	OK       bool            `json:"ok"`
	Saw      json.RawMessage `json:"saw"`
	Error    json.RawMessage `json:"error"`
	Problems []string        `json:"problems"`
}

// jsForms are the forms of the values the service chooses; a want string
// "~name" matches a value of that form.
var jsForms = map[string]*regexp.Regexp{
	// W/"datetime'2024-02-29T12%3A34%3A56.1234567Z'", as Azure forms it.
	"~tableETag": regexp.MustCompile(`^W/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z'"$`),
	// The Timestamp property: UTC, up to 7 fractional digits.
	"~timestamp": regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z$`),
	// A JavaScript Date, as JSON.stringify prints it.
	"~jsDate": regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`),
	// A queue message id.
	"~uuid": regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`),
	// A pop receipt: opaque, URL-safe enough to travel in a query string.
	"~popReceipt": regexp.MustCompile(`^[A-Za-z0-9+/=_-]{8,}$`),
	// A blob or container ETag: "0x8D4BCC2E4835CD0".
	"~blobETag": regexp.MustCompile(`^"0x[0-9A-F]{15,16}"$`),
}

// jsWant is every step interop.mjs runs, in order, with what Azure answers.
//
// Types are preserved exactly as written: Int64 is {value, type: "Int64"}
// (the SDK's Int64 object, or a bigint with type conversion), DateTime
// keeps its 7 fractional digits, Guid and Binary their types. A Double
// travels unannotated in minimal metadata, the JS SDK's only format, so the
// SDK's disableTypeConversion reads 3.0 as {value: "3", type: "Int32"}
// (JSON.parse drops the ".0"); "wire" shows the literal the service sent:
// 3.0, which is what makes it a Double for every client that reads the JSON
// itself, as Azure sends it.
var jsWant = []struct{ step, want string }{
	{"tables.create", `{"status":[201,201]}`},
	{"tables.createExisting", `{"status":409,"code":"TableAlreadyExists"}`},
	{"tables.list", `{"tables":["jsinteropa","jsinteropb"],"paged":["jsinteropa","jsinteropb"],"continued":true}`},
	{"tables.delete", `{"status":204,"tables":["jsinteropa"]}`},
	{"entities.insert", `{"status":204,"etag":"~tableETag"}`},
	{"entities.get", `{"entity":{
		"BigInt":{"value":"1234567890123456789","type":"Int64"},
		"Binary":{"value":"AAEC/f7/","type":"Binary"},
		"BoolFalse":{"value":"false","type":"Boolean"},
		"BoolTrue":{"value":"true","type":"Boolean"},
		"DateJS":{"value":"2024-02-29T12:34:56.789Z","type":"DateTime"},
		"DateTime":{"value":"2024-02-29T12:34:56.1234567Z","type":"DateTime"},
		"Digits":{"value":"007","type":"String"},
		"Double":{"value":"3","type":"Int32"},
		"DoubleFrac":{"value":"0.1","type":"Double"},
		"DoubleInf":{"value":"-Infinity","type":"Double"},
		"DoubleNaN":{"value":"NaN","type":"Double"},
		"Empty":{"value":"","type":"String"},
		"Guid":{"value":"c9da6455-213d-42c9-9a79-3e9149a57833","type":"Guid"},
		"Int32":{"value":"42","type":"Int32"},
		"Int32Typed":{"value":"-7","type":"Int32"},
		"Int64":{"value":"9007199254740993","type":"Int64"},
		"Int64Min":{"value":"-9223372036854775808","type":"Int64"},
		"String":{"value":"Grüße, 世界 🌍 – ÆØÅ","type":"String"},
		"etag":"~tableETag",
		"odata.metadata":{"value":"<TableEndpoint>/$metadata#jsinteropa/@Element","type":"String"},
		"partitionKey":"p1","rowKey":"r01","timestamp":"~timestamp"},
		"wire":{"Int32":"42","Int32Typed":"-7","Double":"3.0","DoubleFrac":"0.1"}}`},
	{"entities.getConverted", `{"entity":{
		"BigInt":{"js":"bigint","value":"1234567890123456789"},
		"Binary":{"js":"Uint8Array","value":[0,1,2,253,254,255]},
		"BoolFalse":false,"BoolTrue":true,
		"DateJS":{"js":"Date","value":"2024-02-29T12:34:56.789Z"},
		"DateTime":{"js":"Date","value":"2024-02-29T12:34:56.123Z"},
		"Digits":"007","Double":3,"DoubleFrac":0.1,"DoubleInf":"-Infinity","DoubleNaN":"NaN","Empty":"",
		"Guid":{"value":"c9da6455-213d-42c9-9a79-3e9149a57833","type":"Guid"},
		"Int32":42,"Int32Typed":-7,
		"Int64":{"js":"bigint","value":"9007199254740993"},
		"Int64Min":{"js":"bigint","value":"-9223372036854775808"},
		"String":"Grüße, 世界 🌍 – ÆØÅ",
		"etag":"~tableETag","odata.metadata":"<TableEndpoint>/$metadata#jsinteropa/@Element",
		"partitionKey":"p1","rowKey":"r01","timestamp":"~timestamp"}}`},
	{"entities.filterTypes", `{"rowKeys":["r01"],"wire":{"Int32":"42","Int32Typed":"-7","Double":"3.0","DoubleFrac":"0.1"}}`},
	{"entities.upsertMerge", `{"status":204,"props":{"A":{"value":"a","type":"String"},"B":{"value":"1","type":"Int32"},"C":{"value":"5","type":"Int64"}}}`},
	{"entities.upsertReplace", `{"properties":["D"]}`},
	{"entities.updateMerge", `{"status":204,"changed":true,"D":true,"E":2.5}`},
	{"entities.updateReplace", `{"status":204,"properties":["F"]}`},
	{"entities.staleETag", `{"merge":` + jsTableError(412, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.") +
		`,"replace":` + jsTableError(412, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.") +
		`,"delete":` + jsTableError(412, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.") + `}`},
	{"entities.updateMissing", `{"error":` + jsTableError(404, "ResourceNotFound", "The specified resource does not exist.") + `}`},
	{"entities.delete", `{"status":204,"after":` + jsTableError(404, "ResourceNotFound", "The specified resource does not exist.") + `}`},
	{"errors.notFound", `{"error":` + jsTableError(404, "ResourceNotFound", "The specified resource does not exist.") + `}`},
	{"errors.tableNotFound", `{"error":` + jsTableError(404, "TableNotFound", "The table specified does not exist.") + `}`},
	{"errors.conflict", `{"error":` + jsTableError(409, "EntityAlreadyExists", "The specified entity already exists.") + `}`},
	{"query.paging", `{"pages":[{"rowKeys":["q2","q3"],"continuation":true},{"rowKeys":["q4","q5"],"continuation":true},{"rowKeys":["q6"],"continuation":false}],"resumed":[["q4","q5"]]}`},
	{"query.select", `{"rows":[{"properties":["big"],"big":{"value":"1000000000000005","type":"Int64"}},{"properties":["big"],"big":{"value":"1000000000000006","type":"Int64"}}]}`},
	{"transaction.submit", `{"status":202,"subStatuses":[204,204,204,204],"etags":["~tableETag","~tableETag","~tableETag",null],
		"after":[{"rowKey":"t0","A":"zero","B":null},{"rowKey":"t1","A":"one","B":{"value":"7","type":"Int64"}},{"rowKey":"t3","A":"three","B":null}]}`},
	// A failed transaction answers 202 with the failed operation's status
	// inside; the SDK raises that status and code, and the message's
	// "1:" names the operation.
	{"transaction.fail", `{"outerStatus":202,"error":{"status":409,"code":"EntityAlreadyExists","errorCode":null,"odataCode":null,"message":"1:The specified entity already exists."},"t4":404}`},
	{"tables.sas", `{"insert":204,"read":"sas","delete":{"status":403,"code":"AuthorizationPermissionMismatch"}}`},
	{"tables.deleteLast", `{"status":204}`},
	{"queues.create", `{"status":201,"queues":["jsinterop-"]}`},
	{"queues.send", `{"status":201,"messageId":"~uuid","popReceipt":"~popReceipt","insertedOn":"~jsDate","expiresOn":"~jsDate","nextVisibleOn":"~jsDate"}`},
	{"queues.peek", `{"messages":[{"messageId":"~uuid","messageText":"héllo wörld <&> 🌍","dequeueCount":0}]}`},
	{"queues.receive", `{"messages":[{"messageId":"~uuid","messageText":"héllo wörld <&> 🌍","dequeueCount":1}],"popReceipt":"~popReceipt","nextVisibleOn":"~jsDate","again":0}`},
	{"queues.update", `{"status":204,"newPopReceipt":true,"message":{"messageId":"~uuid","messageText":"updated ✓","dequeueCount":2}}`},
	{"queues.delete", `{"status":204,"peeked":0,"approximateMessagesCount":0}`},
	{"queues.sas", `{"send":201,"peek":{"status":403,"code":"AuthorizationPermissionMismatch","errorCode":"AuthorizationPermissionMismatch","odataCode":null,
		"message":"This request is not authorized to perform this operation using this permission."},"received":["by SAS"]}`},
	{"queues.notFound", `{"error":{"status":404,"code":"QueueNotFound","errorCode":"QueueNotFound","odataCode":null,"message":"The specified queue does not exist."}}`},
	{"queues.deleteQueue", `{"status":204}`},
	{"blobs.container", `{"status":201,"metadata":{"owner":"jsinterop"},"etag":"~blobETag","lastModified":"~jsDate"}`},
	{"blobs.upload", `{"status":201,"etag":"~blobETag","contentMD5":"H0fTO6+QS1I3mZdKy1s9oA=="}`},
	{"blobs.download", `{"status":200,"body":"blob content, ünïcödé 🌍\n","contentLength":31,"contentType":"text/plain; charset=utf-8","metadata":{"kind":"log"},"blobType":"BlockBlob",
		"range":{"status":206,"body":"blob ","contentRange":"bytes 0-4/31","contentLength":5}}`},
	{"blobs.blocks", `{"body":"first,second","uncommitted":[{"name":"YmxvY2stMDAwMQ==","size":6},{"name":"YmxvY2stMDAwMg==","size":6}],
		"committed":[{"name":"YmxvY2stMDAwMQ==","size":6},{"name":"YmxvY2stMDAwMg==","size":6}]}`},
	{"blobs.list", `{"flat":[{"name":"logs/a.txt","contentLength":31,"blobType":"BlockBlob"},{"name":"logs/b.txt","contentLength":12,"blobType":"BlockBlob"}],
		"hierarchy":[{"prefix":"logs/"},{"blob":"other.txt"}],
		"pages":[{"names":["logs/a.txt"],"continuation":true},{"names":["logs/b.txt"],"continuation":true},{"names":["other.txt"],"continuation":false}]}`},
	{"blobs.append", `{"create":201,"appends":[{"status":201,"offset":"0","committedBlockCount":1},{"status":201,"offset":"3","committedBlockCount":2}],"body":"abcdéfg","blobType":"AppendBlob","committedBlockCount":2}`},
	{"blobs.conditions", `{"ifMatch":{"status":412,"code":"ConditionNotMet","errorCode":"ConditionNotMet","odataCode":null,"message":"The condition specified using HTTP conditional header(s) is not met."},"ifNoneMatch":304}`},
	{"blobs.sas", `{"read":"first,second","put":{"status":403,"code":"AuthorizationPermissionMismatch","errorCode":"AuthorizationPermissionMismatch","odataCode":null,
		"message":"This request is not authorized to perform this operation using this permission."}}`},
	{"blobs.notFound", `{"blob":{"status":404,"code":"BlobNotFound","errorCode":"BlobNotFound","odataCode":null,"message":"The specified blob does not exist."},
		"container":{"status":404,"code":"ContainerNotFound","errorCode":"ContainerNotFound","odataCode":null,"message":"The specified container does not exist."}}`},
	{"blobs.deleteContainer", `{"status":202}`},
}

// jsTableError is a Table service error as interop.mjs describes it: the
// SDK leaves code unset outside transactions; the body's odata.error
// carries the code, the message's first line Azure's text. Azure sends no
// x-ms-error-code with it (testdata/recordings: every recorded Table
// service error); Azurite sends the code there too, so errorCode is
// either (jsAbsentOr).
func jsTableError(status int, code, message string) string {
	return fmt.Sprintf(`{"status":%d,"code":null,"errorCode":%q,"odataCode":%q,"message":%q}`, status, jsAbsentOr+code, code, message)
}

// jsAbsentOr prefixes a want string that matches null or the rest of the
// string.
const jsAbsentOr = "~absentOr:"

func TestJSInterop(t *testing.T) {
	t.Parallel()
	testenv.Tier(t, testenv.TierJS)
	dir := jsInteropReady(t)

	passed := map[string]map[string]bool{}
	seen := map[string]map[string]jsStep{}
	targets := []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"emulator", func(t *testing.T) string { return emulator.StartTB(t, nil).ConnectionString }},
		{"azurite", func(t *testing.T) string { return azurite.StartTB(t, &azurite.Options{Strict: true}).ConnectionString }},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			steps := runInterop(t, dir, target.start(t))
			seen[target.name] = steps
			passed[target.name] = checkInterop(t, steps)
		})
	}

	// Azurite is the control: what the JS SDK does there and fails to do on
	// the emulator is the emulator's bug.
	if seen["emulator"] == nil || seen["azurite"] == nil {
		return // a target that could not run has failed its subtest already
	}
	var bugs []string
	for _, w := range jsWant {
		if passed["azurite"][w.step] && !passed["emulator"][w.step] {
			bugs = append(bugs, w.step)
		}
	}
	if len(bugs) > 0 {
		t.Errorf("emulator bugs: %d steps pass on Azurite and fail on the emulator (TestJSInterop/emulator says how): %s",
			len(bugs), strings.Join(bugs, ", "))
	}
}

// jsInteropReady returns the npm project's directory once node and the
// pinned SDK are installed; otherwise it fails the test with the command
// that installs them.
func jsInteropReady(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the JS SDK interop test needs Node.js 20 or later on PATH (%v); then run `%s` from the repository root", err, jsInstall)
	}
	dir, err := filepath.Abs(jsInteropDir)
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSONFile(filepath.Join(dir, "package.json"), &pkg); err != nil || len(pkg.Dependencies) == 0 {
		t.Fatalf("reading the JS interop project's dependencies: %v", err)
	}
	names := make([]string, 0, len(pkg.Dependencies))
	for name := range pkg.Dependencies {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		version := pkg.Dependencies[name]
		var installed struct {
			Version string `json:"version"`
		}
		err := readJSONFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"), &installed)
		switch {
		case errors.Is(err, os.ErrNotExist):
			t.Fatalf("the JS SDK interop test needs %s@%s, which is not installed: run `%s` from the repository root (make test does)", name, version, jsInstall)
		case err != nil:
			t.Fatalf("reading the installed %s: %v", name, err)
		case installed.Version != version:
			t.Fatalf("the JS SDK interop test pins %s@%s but %s is installed: run `%s` from the repository root (make test does)", name, version, installed.Version, jsInstall)
		}
	}
	return dir
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// runInterop runs interop.mjs against the account of connStr and returns its
// steps by name. It fails the test when the script cannot run, or prints
// what is not a step, or exits in a way its steps do not explain.
func runInterop(t *testing.T, dir, connStr string) map[string]jsStep {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "interop.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TABLEKIT_CONNECTION_STRING="+connStr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	exitCode := cmd.ProcessState.ExitCode()
	if exitCode != 0 && exitCode != 1 {
		t.Fatalf("node interop.mjs: %v (exit %d)\nstderr:\n%s\nstdout:\n%s", runErr, exitCode, stderr.String(), stdout.String())
	}

	steps := map[string]jsStep{}
	anyFailed := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		var s jsStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.Step == "" {
			t.Fatalf("interop.mjs printed a line that is not a step (%v): %s", err, sc.Text())
		}
		if _, dup := steps[s.Step]; dup {
			t.Fatalf("interop.mjs printed step %s twice", s.Step)
		}
		anyFailed = anyFailed || !s.OK
		steps[s.Step] = s
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading interop.mjs's output: %v", err)
	}
	if anyFailed != (exitCode == 1) {
		t.Errorf("interop.mjs exited %d, but its steps say failed=%v\nstderr:\n%s", exitCode, anyFailed, stderr.String())
	}
	return steps
}

// checkInterop asserts every step of jsWant against what the script saw
// and returns which steps passed.
func checkInterop(t *testing.T, steps map[string]jsStep) map[string]bool {
	t.Helper()
	passed := map[string]bool{}
	known := map[string]bool{}
	for _, w := range jsWant {
		known[w.step] = true
		s, ok := steps[w.step]
		if !ok {
			t.Errorf("step %s: interop.mjs did not run it", w.step)
			continue
		}
		var problems []string
		if !s.OK {
			problems = append(problems, "interop.mjs's own checks failed")
		}
		if len(s.Saw) == 0 {
			problems = append(problems, "nothing seen")
		} else {
			problems = append(problems, diffJSON("saw", decodeJSON(t, []byte(w.want)), decodeJSON(t, s.Saw))...)
		}
		if len(problems) > 0 {
			t.Errorf("step %s: %s\n  request:  %s\n  expected: %s\n  got:      %s\n  differs:  %s",
				w.step, problems[0], s.Request, compactJSON(w.want), describeStep(s), strings.Join(problems, "; "))
			continue
		}
		passed[w.step] = true
	}
	var extra []string
	for name := range steps {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("interop.mjs ran steps this test does not assert: %v", extra)
	}
	return passed
}

// describeStep is what a step saw, its error and its own check's problems.
func describeStep(s jsStep) string {
	var b strings.Builder
	b.WriteString(compactJSON(string(s.Saw)))
	if len(s.Error) > 0 {
		b.WriteString(" error=" + compactJSON(string(s.Error)))
	}
	if len(s.Problems) > 0 {
		b.WriteString(" problems=" + strings.Join(s.Problems, " | "))
	}
	return b.String()
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// diffJSON lists where got differs from want. Objects must have the same
// keys, arrays the same length; numbers compare by their JSON text; a want
// string "~form" matches a string of that form (jsForms), one that starts
// with jsAbsentOr null or the rest.
func diffJSON(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %s", path, jsonText(got))}
		}
		var out []string
		for _, k := range sortedKeys(w, g) {
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, jsonText(wv)))
			case !inW:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, jsonText(gv)))
			default:
				out = append(out, diffJSON(path+"."+k, wv, gv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %s, got %s", path, jsonText(want), jsonText(got))}
		}
		var out []string
		for i := range w {
			out = append(out, diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	case string:
		if rest, ok := strings.CutPrefix(w, jsAbsentOr); ok {
			if got != nil && got != any(rest) {
				return []string{fmt.Sprintf("%s: want null or %q, got %s", path, rest, jsonText(got))}
			}
			return nil
		}
		if form, ok := jsForms[w]; ok {
			if g, isString := got.(string); !isString || !form.MatchString(g) {
				return []string{fmt.Sprintf("%s: want the form %s, got %s", path, w, jsonText(got))}
			}
			return nil
		}
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: want %s, got %s", path, jsonText(want), jsonText(got))}
	}
	return nil
}

func sortedKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// jsonText is v as JSON, <, > and & as they are.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
