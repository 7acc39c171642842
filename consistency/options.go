package consistency

// Options of the calls that have no settings yet. Each is there so that a
// call can grow an option without a new signature; pass nil.

// CreateOptions configures Queue.Create.
type CreateOptions struct{}

// DeleteOptions configures Queue.Delete.
type DeleteOptions struct{}

// DepthOptions configures Queue.Depth.
type DepthOptions struct{}

// PoisonedOptions configures Queue.Poisoned.
type PoisonedOptions struct{}

// RunOptions configures Worker.Run. The worker's settings are its
// WorkerOptions, given to NewWorker.
type RunOptions struct{}

// ApplyOptions configures Apply.
type ApplyOptions struct{}
