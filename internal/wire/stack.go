package wire

// GrowStack gives the calling goroutine a stack of 16 KiB, at once, while
// the stack is still shallow. A goroutine starts with 2 KiB and doubles
// its stack when a call needs more: a goroutine that sends a request
// through azcore's pipeline outgrows 8 KiB some forty frames deep
// (net/http's Client.do), and the runtime then walks and copies all of
// them. Grown here, at the goroutine's first frame, the copy walks one
// frame. 16 KiB is what such a goroutine needs, and the largest stack the
// runtime keeps in its per-P caches: a 32 KiB stack is allocated from the
// heap, which costs more than the walk it saves. A goroutine that sends
// requests (a bulk write's workers, a scan's page fetcher) calls it first.
func GrowStack() { growStack(0) }

// growStack's frame is over 8 KiB, so the stack grows to 16 KiB (the
// runtime doubles it until the frame fits). i keeps the array from being
// optimized away.
//
//go:noinline
func growStack(i int) byte {
	var pad [10 << 10]byte
	pad[i] = 1
	return pad[(i*7)&(len(pad)-1)]
}
