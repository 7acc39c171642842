// Package auth authenticates and authorizes requests to the emulator as
// Azure Storage does: Shared Key and Shared Key Lite signatures, account
// SAS and service SAS (permissions, start, expiry, protocol, IP, and a
// table SAS's PartitionKey/RowKey range). A request that fails gets
// Azure's answer as an *answer.Error, which the service writes with
// answer.WriteTable or answer.WriteXML.
//
// New makes an Authenticator for an Account (its name and decoded keys);
// each service calls Authorize with the Operation it parsed from the
// request and serves what the Grant allows.
//
// # Shared Key and Shared Key Lite
//
// The strings to sign are the REST reference's, version 2015-02-21 and
// later: for Blob and Queue, VERB, the eleven standard headers (a zero
// Content-Length is empty), the x-ms- headers and the resource with every
// query parameter; for Table, VERB, Content-MD5, Content-Type, the date
// (x-ms-date when present) and the resource with ?comp= only; Shared Key
// Lite's shorter forms for all three. The canonicalized resource is
// /account followed by the path exactly as sent, so a path-style request
// to the emulator is signed over /devstoreaccount1/devstoreaccount1/...,
// as the SDKs sign it and Azurite checks it. Any key of the account
// signs. A request dated more than 15 minutes from the service's clock is
// refused, as Azure refuses it. The x-ms- headers may be ordered by bytes
// (azqueue, Azurite) or by the Blob service's collation (azblob).
//
// # Shared access signatures
//
// An account SAS (ss, srt) is checked against the Operation's service,
// resource type and permission; a service SAS against its table (tn),
// queue, container or blob (sr c, b, bs, bv; the rscc..rsct overrides are
// signed). Strings to sign follow sv: the service name in the resource
// from 2015-02-21, sip and spr from 2015-04-05, sr and the snapshot time
// from 2018-11-09, ses from 2020-12-06. No clock skew is tolerated on st
// and se (Azure advises back-dating st). Stored access policies (si) are
// found through SetPolicies; an unknown identifier is 403
// AuthenticationFailed. Directory SAS (sr=d) is not served.
//
// # User delegation keys and SAS
//
// A user delegation SAS (skoid, sktid, skt, ske, sks, skv: delegation.go)
// is the Blob service's: it is signed with a user delegation key, whose
// value DelegationKeyValue derives from the account key and the key's
// fields, so that the SAS alone names its key. Its string to sign follows
// sv (saoid, suoid and scid from 2020-02-10, ses from 2020-12-06, skdutid
// and sduoid from 2025-07-05, srh and srq from 2026-04-06); the key's
// window and the SAS's are both checked on the clock, then what a service
// SAS is checked for. The Blob service's Get User Delegation Key takes a
// bearer token alone (Grant.Bearer, BearerIdentity, BearerOnly).
//
// # Answers
//
//   - bad, missing or stale signature, expired or not yet valid SAS:
//     403 AuthenticationFailed (without Azure's AuthenticationErrorDetail,
//     which quotes the signature and the string to sign);
//   - malformed Authorization header (or a scheme other than SharedKey
//     and SharedKeyLite, such as Bearer): 400 InvalidAuthenticationInfo;
//   - no credentials: 401 NoAuthenticationInformation, as Azure answers
//     from version 2019-12-12 (set WWW-Authenticate to WWWAuthenticate);
//     Azurite answers 403 AuthorizationFailure;
//   - SAS for another service, resource type, permission, protocol or
//     source IP: 403 AuthorizationServiceMismatch,
//     AuthorizationResourceTypeMismatch, AuthorizationPermissionMismatch,
//     AuthorizationProtocolMismatch, AuthorizationSourceIPMismatch;
//   - table SAS used on another table, on a table-level operation, or on
//     an entity outside its key range: 403 AuthorizationFailure.
//
// Azurite answers 403 AuthorizationFailure for most of these; the tests
// check that it accepts and refuses the same requests.
package auth
