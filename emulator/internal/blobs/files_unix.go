//go:build unix

package blobs

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of the file at path, read-only: its
// pages come into memory when they are read, as the operating system's
// cache. The mapping is never unmapped (readers may hold it; a content
// file is never changed below its committed size).
func mapFile(path string, size int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < int64(size) {
		return nil, fmt.Errorf("its content file holds %d bytes, its record %d", st.Size(), size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping its content file: %w", err)
	}
	return b[:size:size], nil
}
