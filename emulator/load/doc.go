// Package load is Azure Table storage's load, as a model that
// tablekit's emulator and the Azurite harness's proxy both run:
//
//   - Latency: the delay a request sees before the service works on it:
//     fixed, plus uniform jitter, plus a log-normal part given by its
//     median and 99th percentile, all from one seeded generator.
//   - Throttle: Azure's scalability targets as token buckets per
//     partition and per account, answered 503 ServerBusy as Azure answers
//     (answer.ServerBusy, answer.AccountOverLimit), with counts.
//   - Model: the scale model the emulator's Table service runs (its Load):
//     the Throttle, plus partitions spread over simulated partition
//     servers that serve pages in turn.
//
// # The numbers
//
// Azure's performance and scalability checklist for Table storage: one
// partition serves about 2,000 entities a second (1 KiB entities), an
// account about 20,000; scanned entities count, not returned ones; a
// transaction counts its entities. Azure publishes targets, not service
// times, so the Model's defaults are derived from them: ten servers (the
// account's target is ten partitions at theirs) and 500 µs an entity (a
// busy server serves one partition's target). ModelOptions.Scale scales
// every rate down (and every service time up) together, so the model, not
// a small machine, is what a benchmark measures.
//
// # What the Model is
//
// A partition (a table and a PartitionKey) lives on one of N servers,
// chosen by a stable hash of the table's name and the PartitionKey. A
// server works on one page at a time (Parallel at once), each for
// PageTime plus EntityTime per entity it scans, in the order the work
// arrives: work on different servers runs in parallel, work on one server
// queues. Every request is admitted or refused by the Throttle first; a
// query is charged what its pages scanned.
//
// Placement is a hash, not Azure's range map. Azure assigns contiguous
// ranges of (table, PartitionKey) to servers and moves the range
// boundaries as load changes: it splits a hot range and merges cold ones.
// The model does not simulate that load balancer; a hash gives every
// workload the spread an account reaches once Azure has balanced it,
// stays the same from run to run, and needs no state. What it gives up:
// neighbouring partitions are on different servers (on Azure, a scan
// across them may stay on one server until a range splits), and an
// append-only key pattern (the guide's prepend/append anti-pattern) is not
// piled onto one server; only its partition's target limits it.
//
// # What the Model is not
//
// It is no measure of Azure's absolute speed: service times are derived
// from targets, the network is Latency's, and entity size does not change
// the cost (every entity counts as the targets' 1 KiB). It does not model
// the load balancer's range splits and merges, the 5-second page budget,
// 500 OperationTimedOut, per-server memory or disk, the secondary region,
// or throttling by bandwidth or request rate other than entities. Its
// throttle answers at the targets exactly; Azure's throttling starts
// around them, varies, and may let a burst through that the model
// refuses, or refuse one it lets through.
package load
