// Package wire is tablekit's one way to reach the Table service. Every
// repository of package patterns, every step of package consistency and the
// worker read and write entities through a *Table, and nothing else in the
// project calls aztables.Client for entity operations. What is proven here
// holds for all of them:
//
//   - one transport chosen once per table: REST through the account's azcore
//     pipeline (internal/tablehttp), or the aztables SDK for Cosmos DB Table
//     endpoints and when asked for;
//   - lost responses resolved: a write that failed only because its own
//     earlier attempt landed (409, 412 or 404 after azcore retried it, or a
//     transport failure) is read back and reported as done when the stored
//     state shows it, and as tablekit.ErrOutcomeUnknown when nothing can tell;
//   - errors mapped to tablekit's typed errors, labelled with the table and
//     keys;
//   - tracing: each operation starts a span through azcore's tracer, named
//     as aztables names its own (Client.GetEntity, Client.AddEntity, ...);
//   - redaction: the account's pipeline scrubs SAS signatures from transport
//     errors;
//   - Modify, the one read-modify-write loop: read, apply, conditional write
//     with the write-id log, jittered pause, bounded attempts, applied exactly
//     once or tablekit.ErrOutcomeUnknown.
package wire
