//go:build !unix

package blobs

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the first size bytes of the file at path (where there is
// no mmap, contents are read into memory at Open).
func mapFile(path string, size int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("its content file: %w", err)
	}
	return b, nil
}
