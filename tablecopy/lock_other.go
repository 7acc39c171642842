//go:build !unix

package tablecopy

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit"
)

// lockFile is not available here: distributed backups to a local
// directory need flock, which only Unix systems have.
func lockFile(_ context.Context, p string) (func(), error) {
	return nil, fmt.Errorf("%w: locking %s: a distributed backup to a directory needs a Unix system's flock; use blob://", tablekit.ErrInvalidArgument, p)
}
