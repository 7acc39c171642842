package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
)

// manifest is what TestDeployManifests reads from a YAML file, line by
// line (the manifests use block style only; no YAML library is needed to
// find these keys).
type manifest struct {
	name  string
	text  string
	args  [][]string        // each container's args
	paths []string          // path: /... values (probes, scrape annotations)
	ports []int             // port: N values of probes
	keys  map[string]string // the last value of every other "key: value"
	envs  []string          // names of environment variables set
}

func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

func readManifest(t *testing.T, file string) manifest {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := manifest{name: filepath.Base(file), text: string(b), keys: map[string]string{}}
	lines := strings.Split(m.text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		item := strings.TrimPrefix(trimmed, "- ")
		key, val, ok := strings.Cut(item, ":")
		if !ok {
			continue
		}
		val = unquote(val)
		switch {
		case key == "args" && val == "":
			var args []string
			for i+1 < len(lines) {
				next := lines[i+1]
				nt := strings.TrimSpace(next)
				if !strings.HasPrefix(nt, "- ") || len(next)-len(strings.TrimLeft(next, " ")) < indent {
					break
				}
				args = append(args, unquote(strings.TrimPrefix(nt, "- ")))
				i++
			}
			m.args = append(m.args, args)
		case strings.HasSuffix(key, "path") && strings.HasPrefix(val, "/"):
			m.paths = append(m.paths, val)
		case key == "port":
			n, err := strconv.Atoi(val)
			if err != nil {
				t.Errorf("%s: port %q", m.name, val)
			}
			m.ports = append(m.ports, n)
		case key == "name" && strings.HasPrefix(trimmed, "- ") && strings.ToUpper(val) == val && val != "":
			m.envs = append(m.envs, val)
		default:
			m.keys[key] = val
		}
	}
	return m
}

// imageRef is how the manifests name the worker's image: make images tags
// it tablekit-worker:VERSION, and REGISTRY stands for the user's registry.
var imageRef = regexp.MustCompile(`^REGISTRY/tablekit-worker:v\d+\.\d+\.\d+$`)

// TestDeployManifests checks docs/deploy/*.yaml against the binary: every
// container runs "run" with flags that parse (so they exist, with valid
// values), every HTTP path is served, probe ports are --metrics-addr's
// port, each scaler reads the queue the worker reads, the termination
// grace period exceeds --drain, the image is the one make images builds,
// Kubernetes runs it as non-root, KEDA's connectionFromEnv names a variable
// the manifest sets, the environment holds only secrets, and
// docs/DEPLOY.md shows each file as it is.
func TestDeployManifests(t *testing.T) {
	files, err := filepath.Glob("../../docs/deploy/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	deploy, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := tablekit.Connect(tablekit.DevelopmentConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	var help strings.Builder
	usage(&help, commands(&config{}))

	var ms []manifest
	var workload *manifest // the Deployment a ScaledObject scales
	for _, file := range files {
		ms = append(ms, readManifest(t, file))
		if ms[len(ms)-1].keys["kind"] == "Deployment" {
			workload = &ms[len(ms)-1]
		}
	}
	if workload == nil {
		t.Fatal("no Deployment manifest")
	}
	kinds := map[string]bool{}
	for _, m := range ms {
		kind := m.keys["kind"]
		if _, ok := m.keys["azureQueue"]; ok {
			kind = "Container Apps azureQueue"
		}
		kinds[kind] = true
		if !strings.Contains(string(deploy), "```yaml\n"+m.text+"```") {
			t.Errorf("docs/DEPLOY.md does not show %s as it is", m.name)
		}
		args := workload.args
		switch len(m.args) {
		case 0:
			if kind != "ScaledObject" {
				t.Fatalf("%s: no container args", m.name)
			}
		case 1:
			args = m.args
		default:
			t.Fatalf("%s: %d args lists, want 1", m.name, len(m.args))
		}
		c := &config{}
		run := commands(c)[0]
		if len(args[0]) == 0 || args[0][0] != run.name {
			t.Fatalf("%s: args %v do not start with %q", m.name, args[0], run.name)
		}
		if err := run.fs.Parse(args[0][1:]); err != nil || len(run.fs.Args()) > 0 {
			t.Fatalf("%s: tablekit-worker %v: %v", m.name, args[0], err)
		}
		if _, err := parseBackoff(c.backoff); err != nil {
			t.Errorf("%s: %v", m.name, err)
		}
		for _, p := range m.paths {
			resp, err := http.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				t.Errorf("%s: the worker does not serve %s", m.name, p)
			}
		}
		if len(m.ports) > 0 {
			_, port, err := net.SplitHostPort(c.metricsAddr)
			if err != nil || c.metricsAddr == "" {
				t.Errorf("%s: probes on port %v but --metrics-addr %q", m.name, m.ports, c.metricsAddr)
			}
			for _, p := range m.ports {
				if strconv.Itoa(p) != port {
					t.Errorf("%s: probe port %d, --metrics-addr %s", m.name, p, c.metricsAddr)
				}
			}
		}
		if q, ok := m.keys["queueName"]; ok && (len(c.queues) != 1 || q != c.queues[0]) {
			t.Errorf("%s: the scaler reads queue %q, the worker %v", m.name, q, c.queues)
		}
		grace := 30 * time.Second // Kubernetes' and Container Apps' default
		if g := m.keys["terminationGracePeriodSeconds"]; g != "" {
			n, err := strconv.Atoi(g)
			if err != nil {
				t.Fatalf("%s: terminationGracePeriodSeconds %q", m.name, g)
			}
			grace = time.Duration(n) * time.Second
		}
		if kind != "ScaledObject" && grace <= c.drain {
			t.Errorf("%s: termination grace period %v is not longer than --drain %v", m.name, grace, c.drain)
		}
		for _, e := range m.envs {
			if !strings.Contains(help.String(), e) {
				t.Errorf("%s: sets %s, which tablekit-worker does not read", m.name, e)
			}
			if e != "AZURE_STORAGE_CONNECTION_STRING" && e != envDestConnectionString {
				t.Errorf("%s: sets %s; settings are flags in args:, only secrets come from the environment", m.name, e)
			}
		}
		if e := m.keys["connectionFromEnv"]; e != "" && !strings.Contains(strings.Join(append(m.envs, workload.envs...), " "), e) {
			t.Errorf("%s: connectionFromEnv %s is not set in the manifest", m.name, e)
		}
		// The image is the one make images builds (build/worker/Dockerfile),
		// in the user's registry; it runs as a user other than root, which
		// Kubernetes can enforce.
		if img, ok := m.keys["image"]; ok && !imageRef.MatchString(img) {
			t.Errorf("%s: image %q, want REGISTRY/tablekit-worker:vX.Y.Z, the image make images builds", m.name, img)
		}
		if kind == "Deployment" || kind == "ScaledJob" {
			if m.keys["runAsNonRoot"] != "true" {
				t.Errorf("%s: no runAsNonRoot: true, although the image runs as 65532", m.name)
			}
		}
		if m.keys["kind"] == "ScaledJob" && !c.untilEmpty {
			t.Errorf("%s: a ScaledJob must run --until-empty, or its Jobs never complete", m.name)
		}
	}
	for _, k := range []string{"Deployment", "ScaledObject", "ScaledJob", "Container Apps azureQueue"} {
		if !kinds[k] {
			t.Errorf("no %s manifest", k)
		}
	}
}
