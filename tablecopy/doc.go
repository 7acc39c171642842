// Package tablecopy copies, backs up, restores and verifies whole tables,
// over patterns' parallel scan (Table.Scan) and bulk writer
// (Table.BulkWrite). It is the library under the tablekit command's copy,
// backup, restore and verify; docs/COPY.md says what each guarantees on a
// live table.
//
// # Start here
//
//   - Copy copies a table to another, in one account or across accounts
//     (Azure Table storage or Cosmos DB as the source), every property and
//     EDM type exactly, tablekit's own Tk* properties included.
//   - Backup writes tables to a Location (Dir, or Blob in Blob storage;
//     ParseLocation reads either): each table cut into key ranges, each
//     range's entities in its own gzip JSON lines segments, a key list
//     per table, and a Manifest naming the ranges (KeyRange). With
//     BackupOptions.Base it is incremental: the entities changed since
//     the base, and the keys deleted since.
//   - Restore writes a backup (and its chain of bases) back into tables.
//   - VerifyBackup checks a backup's files against its manifest and
//     compares it with tables, by the manifest's key ranges; Compare
//     compares two tables. Each difference is a Mismatch naming its key
//     range (and its segments) or file.
//   - StartCopyJob and StartBackupJob run a copy or a backup on many
//     machines: one queue message per key range, taken by workers that
//     register RangeHandler (tablekit-worker does); ReadJob, FinishJob and
//     RequeueJob follow and finish them (docs/COPY.md, "Distributed").
//     Copies may be filtered; backups are full, changes or incremental,
//     into Blob storage or a directory every worker shares.
//
// All of them follow patterns' contract: ctx first, options last, nil meaning
// the defaults; errors name the table, segment or key range.
//
// # Resuming
//
// Copy, Backup and Restore keep a checkpoint after every page (Copy beside
// the target, in DefaultCheckpointTable; Backup and Restore in the backup's
// Location) and continue from it when called again with the same
// arguments after an interruption, SIGKILL included: no entity is lost,
// none is written twice, and what an interrupted run had done already is
// counted as skipped.
//
// # Checksums
//
// An entity's checksum (EntityHash) is taken over its Canonical line: its
// keys and properties as the Table service's JSON, properties sorted,
// every type annotated, without Timestamp and ETag. A set's checksum
// (Sum) adds them up, so it does not depend on order, and a Sum of a
// backup, its source and a restored copy are equal when their entities
// are.
package tablecopy
