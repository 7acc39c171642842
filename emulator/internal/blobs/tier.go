package blobs

import (
	"net/http"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Access tiers of block blobs on a standard account: Hot, Cool, Cold
// (from version 2021-12-02) and Archive, set by x-ms-access-tier on Put
// Blob and Put Block List and by Set Blob Tier (REST "Set Blob Tier").
// A blob written without one is Hot, inferred from the account's default
// (x-ms-access-tier-inferred). Setting a tier changes neither the blob's
// ETag nor its Last-Modified.
//
// An archived blob is offline: Get Blob answers 409 BlobArchived, and so
// do the writes that would read or change it in place (Set Blob Metadata,
// Set Blob Properties, Snapshot Blob, an overwrite, a copy from it);
// its properties, metadata and tags are read as usual ("Access tiers for
// blob data": "Archive access tier"). Setting it online again (Hot, Cool
// or Cold) is a rehydration: 202, and the blob stays archived, its
// x-ms-archive-status rehydrate-pending-to-TIER, until the rehydration is
// done by the service's clock: rehydrateStandard after the request, or
// rehydrateHigh with x-ms-rehydrate-priority: High ("Blob rehydration
// from the archive tier": up to 15 hours at Standard priority, under one
// hour at High for a blob under 10 GiB). Azurite puts the blob online at
// once; the emulator keeps Azure's wait, which a test skips with the
// emulator's clock (Instance.Advance, Config.Now).

// The time a rehydration takes, by its priority.
const (
	rehydrateStandard = 15 * time.Hour
	rehydrateHigh     = time.Hour
)

// Azure's answers about tiers. The words of BlobArchived and
// AccessTierNotSupportedForBlobType are Azurite's
// (src/blob/errors/StorageErrorFactory.ts); BlobBeingRehydrated's are
// Azure's (REST "Blob service error codes").
var (
	errBlobArchived           = answer.New(http.StatusConflict, "BlobArchived", "This operation is not permitted on an archived blob.")
	errBlobBeingRehydrated    = answer.New(http.StatusConflict, "BlobBeingRehydrated", "This operation is not permitted because the blob is being rehydrated.")
	errTierNotSupportedByKind = answer.New(http.StatusBadRequest, "AccessTierNotSupportedForBlobType", "The access tier is not supported for this blob type.")
)

// tiering is a block blob's access tier as stored. The zero value is a
// blob whose tier is inferred (Hot).
type tiering struct {
	tier    string    // Hot, Cool, Cold or Archive; "" when inferred
	changed time.Time // when the tier was last set; zero if never
	// to is the tier a pending rehydration brings the archived blob to,
	// at done; "" when none is pending.
	to       string
	done     time.Time
	priority string // the pending rehydration's: Standard or High
}

// current is t as it is at now: a rehydration whose time has come is
// done.
func (t tiering) current(now func() time.Time) tiering {
	if t.to != "" && !now().Before(t.done) {
		t = tiering{tier: t.to, changed: t.done}
	}
	return t
}

// name is the tier x-ms-access-tier and AccessTier show.
func (t tiering) name() string {
	if t.tier == "" {
		return "Hot"
	}
	return t.tier
}

// archived says whether the blob is offline: archived, or rehydrating.
func (t tiering) archived() bool { return t.tier == "Archive" }

// archiveStatus is x-ms-archive-status: rehydrate-pending-to-TIER while
// a rehydration is pending, empty otherwise.
func (t tiering) archiveStatus() string {
	if t.to == "" {
		return ""
	}
	return "rehydrate-pending-to-" + lowerTier(t.to)
}

func lowerTier(t string) string {
	switch t {
	case "Hot":
		return "hot"
	case "Cool":
		return "cool"
	}
	return "cold"
}

// parseTier reads a block blob's tier as x-ms-access-tier sends it
// (case-insensitively, as Azure and Azurite read it): Cold from version
// 2021-12-02. A value it cannot read is 400 InvalidHeaderValue.
func parseTier(r *http.Request, v string) (string, *answer.Error) {
	if premiumPageTier(v) {
		return "", errNotImplemented("premium page blob tiers (x-ms-access-tier " + v + ")")
	}
	for _, t := range []string{"Hot", "Cool", "Cold", "Archive"} {
		if strings.EqualFold(v, t) {
			if t == "Cold" && !apiVersionAtLeast(r, "2021-12-02") {
				break
			}
			return t, nil
		}
	}
	return "", answer.InvalidHeader("x-ms-access-tier", v)
}

// uploadTier reads the tier Put Blob or Put Block List writes the blob
// in: inferred when x-ms-access-tier is absent. A tier for an append
// blob is refused.
func uploadTier(r *http.Request, kind blobKind, now time.Time) (tiering, *answer.Error) {
	v := r.Header.Get("x-ms-access-tier")
	if v == "" {
		return tiering{}, nil
	}
	t, e := parseTier(r, v)
	if e != nil {
		return tiering{}, e
	}
	if kind != blockBlob {
		return tiering{}, errTierNotSupportedByKind
	}
	return tiering{tier: t, changed: now}, nil
}

// setBlobTier is Set Blob Tier: 200 once the tier is set, or 202 for a
// rehydration from the archive tier (the blob stays archived until it is
// done). A leased blob needs its lease ID (Azurite's LeaseIdMissing;
// REST "Set Blob Tier" lists x-ms-lease-id). A rehydration pending takes
// only its own tier again (a higher priority shortens it); any other is
// 409 BlobBeingRehydrated.
func (s *Service) setBlobTier(q *request) *answer.Error {
	if q.query.Has("snapshot") {
		return errNotImplemented("Set Blob Tier on a snapshot")
	}
	h := q.r.Header
	v := h.Get("x-ms-access-tier")
	if v == "" {
		return answer.MissingHeader("x-ms-access-tier")
	}
	tier, e := parseTier(q.r, v)
	if e != nil {
		return e
	}
	ifTags, e := ifTagsCondition(h, "x-ms-if-tags")
	if e != nil {
		return e
	}
	priority := "Standard"
	if p := h.Get("x-ms-rehydrate-priority"); p != "" {
		switch {
		case strings.EqualFold(p, "High"):
			priority = "High"
		case strings.EqualFold(p, "Standard"):
		default:
			return answer.InvalidHeader("x-ms-rehydrate-priority", p)
		}
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	b := c.blobs[q.blob]
	if b == nil {
		return errBlobNotFound
	}
	if ifTags != nil && !ifTags.match(b.tags, "") {
		return errConditionNotMet
	}
	if e := checkLease(b.lease.current(s.cfg.Now), h.Get("x-ms-lease-id"), true, blobLeaseErrors); e != nil {
		return e
	}
	if b.kind != blockBlob {
		return errTierNotSupportedByKind
	}
	now := s.cfg.Now().UTC()
	t := b.tiering.current(s.cfg.Now)
	status := http.StatusOK
	switch {
	case t.to != "" && tier != t.to:
		return errBlobBeingRehydrated
	case t.to != "":
		status = http.StatusAccepted
		if priority == "High" && t.priority != "High" {
			t.priority = priority
			if soon := now.Add(rehydrateHigh); soon.Before(t.done) {
				t.done = soon
			}
		}
	case t.archived() && tier != "Archive":
		status = http.StatusAccepted
		wait := rehydrateStandard
		if priority == "High" {
			wait = rehydrateHigh
		}
		t.to, t.done, t.priority = tier, now.Add(wait), priority
	default:
		t = tiering{tier: tier, changed: now}
	}
	// A blob is replaced, never changed in place: readers hold views.
	nb := *b
	nb.tiering = t
	c.blobs[q.blob] = &nb
	q.pending = s.saveBlob(c, q.blob, &nb, content{})
	setCommon(q.w.Header(), q.r)
	q.w.WriteHeader(status)
	return nil
}

// setTierHeaders writes a block blob's tier as Get Blob Properties
// answers it.
func setTierHeaders(h http.Header, t tiering) {
	h.Set("x-ms-access-tier", t.name())
	if t.tier == "" {
		h.Set("x-ms-access-tier-inferred", "true")
	}
	if !t.changed.IsZero() {
		h.Set("x-ms-access-tier-change-time", httpTime(t.changed))
	}
	if st := t.archiveStatus(); st != "" {
		h.Set("x-ms-archive-status", st)
		h.Set("x-ms-rehydrate-priority", t.priority)
	}
}
