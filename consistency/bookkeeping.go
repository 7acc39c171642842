package consistency

// Properties tablekit stores on the entities whose views the worker keeps.
// Each starts with "Tk", a prefix tablekit's repositories refuse on a
// user's type, and is a C# identifier, so Azure accepts it.
// docs/PROPERTIES.md lists where each appears and why.
const (
	// CopiesProperty holds, on a source entity, the JSON list of its
	// views (CopySpec): the sync-copies step writes and deletes the copies
	// elsewhere from it, and the move-entity step deletes every view it
	// lists when it moves the source.
	CopiesProperty = "TkCopies"
	// IntentProperty holds, on a source entity, the id of the write that
	// last changed it (NewIntentID); the write's queued step expects it
	// (Expectation), so a worker that runs before the write has landed
	// waits instead of syncing the views to the old state.
	IntentProperty = "TkIntent"
	// PrimaryPartitionKeyProperty and PrimaryRowKeyProperty hold, on a
	// copy, the keys of the entity it copies, so a lookup through the copy
	// returns the primary's keys. A source whose copies live in other
	// partitions carries them too: its copies are projections of it.
	PrimaryPartitionKeyProperty = "TkPrimaryPK"
	PrimaryRowKeyProperty       = "TkPrimaryRK"
)

// bookkeeping lists the properties a move (KindMoveEntity) leaves
// behind: they describe the source's place among its views, which the
// move deletes, and would name copies that no longer exist.
var bookkeeping = []string{CopiesProperty, IntentProperty, PrimaryPartitionKeyProperty, PrimaryRowKeyProperty}
