package emulator_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/emulator"
)

// BenchmarkLocationWrites measures what a location (Options.Location) costs the
// Queue and Blob services: Put Message (a 100-byte message) and Put Blob
// (a 4 KiB and a 1 MiB block blob), from one client at a time
// (conc=1) and from 16 at once (conc=16, where writes share an fsync),
// in memory and with a location, side by side in one run:
//
//	go test -run '^$' -bench BenchmarkLocationWrites -benchtime 2s ./emulator/
func BenchmarkLocationWrites(b *testing.B) {
	for _, op := range []struct {
		name string
		size int
	}{{"message", 100}, {"blob4KiB", 4 << 10}, {"blob1MiB", 1 << 20}} {
		for _, conc := range []int{1, 16} {
			for _, store := range []string{"memory", "location"} {
				b.Run(fmt.Sprintf("op=%s/conc=%d/store=%s", op.name, conc, store), func(b *testing.B) {
					opts := &emulator.Options{}
					if store == "location" {
						opts.Location = b.TempDir()
					}
					em := emulator.StartTB(b, opts)
					ctx := context.Background()
					payload := bytes.Repeat([]byte("x"), op.size)
					var write func(i int64) error
					if op.name == "message" {
						qs, err := azqueue.NewServiceClientFromConnectionString(em.ConnectionString, nil)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := qs.CreateQueue(ctx, "bench", nil); err != nil {
							b.Fatal(err)
						}
						q := qs.NewQueueClient("bench")
						write = func(int64) error {
							_, err := q.EnqueueMessage(ctx, string(payload), nil)
							return err
						}
					} else {
						bs, err := azblob.NewClientFromConnectionString(em.ConnectionString, nil)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := bs.CreateContainer(ctx, "bench", nil); err != nil {
							b.Fatal(err)
						}
						write = func(i int64) error {
							_, err := bs.UploadBuffer(ctx, "bench", fmt.Sprintf("b%09d", i), payload, nil)
							return err
						}
					}
					var n atomic.Int64
					b.SetBytes(int64(op.size))
					// RunParallel runs parallelism × GOMAXPROCS goroutines.
					b.SetParallelism(max(1, conc/runtime.GOMAXPROCS(0)))
					b.ResetTimer()
					if conc == 1 {
						for i := 0; i < b.N; i++ {
							if err := write(int64(i)); err != nil {
								b.Fatal(err)
							}
						}
					} else {
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								if err := write(n.Add(1)); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					b.StopTimer()
				})
			}
		}
	}
}
