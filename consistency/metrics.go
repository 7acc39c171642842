package consistency

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/internal/buildinfo"
)

// Metrics counts what a Worker does. It is safe for concurrent use;
// WritePrometheus exposes it in the Prometheus text format.
type Metrics struct {
	processed     atomic.Int64
	retried       atomic.Int64
	poisoned      atomic.Int64
	released      atomic.Int64
	inFlight      atomic.Int64
	waiting       atomic.Int64
	receiveErrors atomic.Int64
	depthErrors   atomic.Int64

	depthMu sync.Mutex
	depths  []QueueDepth // in the order of WorkerOptions.Queues

	// apply is the time from receiving a message to deleting it;
	// age is the time from enqueueing to deleting (enqueue-to-applied).
	apply, age histogram
}

// Processed is the number of transactions applied and deleted.
func (m *Metrics) Processed() int64 { return m.processed.Load() }

// Retried is the number of failed attempts released for a later retry.
func (m *Metrics) Retried() int64 { return m.retried.Load() }

// Poisoned is the number of messages moved to a poison queue.
func (m *Metrics) Poisoned() int64 { return m.poisoned.Load() }

// InFlight is the number of messages being processed now.
func (m *Metrics) InFlight() int64 { return m.inFlight.Load() }

// Released is the number of messages handed back unprocessed at shutdown.
func (m *Metrics) Released() int64 { return m.released.Load() }

// Waiting is the number of received messages waiting for a free slot.
func (m *Metrics) Waiting() int64 { return m.waiting.Load() }

// QueueDepths returns the queue depths last read (every
// WorkerOptions.DepthInterval), one per queue read so far.
func (m *Metrics) QueueDepths() []QueueDepth {
	m.depthMu.Lock()
	defer m.depthMu.Unlock()
	return slices.Clone(m.depths)
}

func (m *Metrics) setDepth(d QueueDepth) {
	m.depthMu.Lock()
	defer m.depthMu.Unlock()
	for i := range m.depths {
		if m.depths[i].Queue == d.Queue {
			m.depths[i] = d
			return
		}
	}
	m.depths = append(m.depths, d)
}

var buckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

type histogram struct {
	mu     sync.Mutex
	counts [15]int64 // len(buckets)+1
	sum    float64
	n      int64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	h.mu.Lock()
	i := 0
	for i < len(buckets) && s > buckets[i] {
		i++
	}
	h.counts[i]++
	h.sum += s
	h.n++
	h.mu.Unlock()
}

func (h *histogram) write(w *bufio.Writer, name, help string) {
	h.mu.Lock()
	counts, sum, n := h.counts, h.sum, h.n
	h.mu.Unlock()
	w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n")
	var cum int64
	for i, b := range buckets {
		cum += counts[i]
		w.WriteString(name + `_bucket{le="` + strconv.FormatFloat(b, 'g', -1, 64) + `"} ` + strconv.FormatInt(cum, 10) + "\n")
	}
	w.WriteString(name + `_bucket{le="+Inf"} ` + strconv.FormatInt(n, 10) + "\n")
	w.WriteString(name + "_sum " + strconv.FormatFloat(sum, 'g', -1, 64) + "\n")
	w.WriteString(name + "_count " + strconv.FormatInt(n, 10) + "\n")
}

// WritePrometheus writes the metrics in the Prometheus text exposition
// format (version 0.0.4).
func (m *Metrics) WritePrometheus(out io.Writer) error {
	w := bufio.NewWriter(out)
	counter := func(name, help string, v int64, typ string) {
		w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n" + name + " " + strconv.FormatInt(v, 10) + "\n")
	}
	// The build, as "tablekit-worker --version" prints it: a gauge of 1
	// whose label says which version a worker runs, as Prometheus's
	// *_build_info convention has it.
	w.WriteString("# HELP tablekit_worker_build_info The build of tablekit the worker runs, in its version label.\n# TYPE tablekit_worker_build_info gauge\n")
	w.WriteString(`tablekit_worker_build_info{version="` + labelEscaper.Replace(buildinfo.Version()) + `"} 1` + "\n")
	counter("tablekit_worker_processed_total", "Transactions applied and deleted from their queue.", m.processed.Load(), "counter")
	counter("tablekit_worker_retried_total", "Failed attempts released for a retry after a backoff.", m.retried.Load(), "counter")
	counter("tablekit_worker_poisoned_total", "Messages moved to a poison queue.", m.poisoned.Load(), "counter")
	counter("tablekit_worker_released_total", "Messages handed back unprocessed at shutdown.", m.released.Load(), "counter")
	counter("tablekit_worker_receive_errors_total", "Failed receive calls.", m.receiveErrors.Load(), "counter")
	counter("tablekit_worker_depth_errors_total", "Failed reads of a queue's depth.", m.depthErrors.Load(), "counter")
	counter("tablekit_worker_in_flight", "Messages being processed.", m.inFlight.Load(), "gauge")
	counter("tablekit_worker_waiting", "Received messages waiting for a free slot.", m.waiting.Load(), "gauge")
	if depths := m.QueueDepths(); len(depths) > 0 {
		gauge := func(name, help string, v func(QueueDepth) int64) {
			w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n")
			for _, d := range depths {
				// Queue names are lowercase letters, digits and dashes:
				// nothing to escape in a label value.
				w.WriteString(name + `{queue="` + d.Queue + `"} ` + strconv.FormatInt(v(d), 10) + "\n")
			}
		}
		gauge("tablekit_worker_queue_messages", "Approximate number of messages in the transaction queue, visible and invisible, as last read.", func(d QueueDepth) int64 { return d.Messages })
		gauge("tablekit_worker_poison_messages", "Approximate number of messages in the queue's poison queue, as last read.", func(d QueueDepth) int64 { return d.Poison })
	}
	m.apply.write(w, "tablekit_worker_apply_seconds", "Time from receiving a transaction to deleting its message.")
	m.age.write(w, "tablekit_worker_end_to_end_seconds", "Time from enqueueing a transaction to deleting its message.")
	return w.Flush()
}

// labelEscaper escapes a label value of the Prometheus text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// metricsHandler serves /metrics, /livez, /readyz and /healthz (the same
// as /readyz); see Worker.Handler.
func metricsHandler(m *Metrics, ready func() (bool, string)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = m.WritePrometheus(w)
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	readyz := func(w http.ResponseWriter, r *http.Request) {
		ok, why := ready()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, why+"\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	}
	mux.HandleFunc("GET /readyz", readyz)
	mux.HandleFunc("GET /healthz", readyz)
	return mux
}
