// Package tables is the emulator's Table service: tables, entities,
// queries and entity group transactions, answering as Azure Table storage
// answers.
package tables

import (
	"context"
	"net/http"

	"github.com/tablekit/tablekit/integration/emulator/internal/auth"
	"github.com/tablekit/tablekit/internal/azrules"
)

// Load is the scale model's view of the work the service does. A nil
// Load means no model: nothing is throttled and work takes no time.
type Load interface {
	// Admit is asked before a request does its work, with the partition
	// it addresses (pk; "" for a query naming no single partition or a
	// table operation, which count for the account only) and its cost
	// in entities (a write 1, a transaction its operations; a query 1
	// to be admitted, its scanned entities charged later by Charge). A
	// non-nil answer (503 ServerBusy) is sent instead.
	Admit(ctx context.Context, table, pk string, cost int) *azrules.Error
	// Charge adds what a query page scanned to the partition's (or the
	// account's, pk "") count after the page is read.
	Charge(table, pk string, scanned int)
	// Server is the simulated partition server that serves a partition.
	Server(table, pk string) int
	// Work blocks for the service time of reading scanned entities on
	// server, queued behind the server's other work; it returns early
	// with ctx's error.
	Work(ctx context.Context, server, scanned int) error
}

// EarlyEnd makes query pages end early as Azure's may: at a partition
// server boundary, after a page's time budget, or empty with a
// continuation. It is seeded, so a test that fails on it fails again.
type EarlyEnd struct {
	Seed int64
	// Probability is the chance, per page, that the page ends early (at
	// a random point, possibly before any entity) with a continuation.
	// Zero means 0.5.
	Probability float64
}

// Config is what the service serves and how.
type Config struct {
	// Account is the account name, the first segment of every path.
	Account string
	// Auth checks every request.
	Auth *auth.Authenticator
	// Cosmos applies the Cosmos DB Table API's profile: its name and size
	// rules, case-sensitive table names, results not sorted.
	Cosmos bool
	// EarlyEnd, when set, ends query pages early as Azure may.
	EarlyEnd *EarlyEnd
	// Load is the scale model; nil means none.
	Load Load
}

// Service is the Table service of one emulator instance.
type Service struct {
	cfg Config
}

// New returns an empty Table service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// ServeHTTP answers one request to the Table service.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	azrules.WriteTable(w, r, azrules.New(http.StatusNotImplemented, "NotImplemented", "contract: implemented on the tables branch"))
}
