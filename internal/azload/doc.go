// Package azload is Azure Table storage's load, as a model tablekit's
// emulator and the Azurite harness's proxy both run: the latency a
// request sees (Latency: fixed, uniform jitter, a seeded log-normal) and
// the throttling at Azure's scalability targets (Throttle: token buckets
// per partition and per account, answered 503 ServerBusy as Azure answers,
// with azrules' answers).
//
// The numbers come from Azure's performance and scalability checklist
// for Table storage: one partition serves about 2,000 entities a second
// (1 KiB entities), an account about 20,000; scanned entities count, not
// returned ones; a transaction counts its entities.
package azload
