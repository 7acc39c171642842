package keys

import (
	"hash/fnv"
	"strconv"
)

// Bucket maps key to one of n buckets, 0 to n-1: the 32-bit FNV-1a hash of
// key's UTF-8 bytes (offset basis 2166136261, prime 16777619), mixed by
// MurmurHash3's 32-bit finalizer (fmix32), modulo n. The result is the
// same on every platform, Go version and tablekit version, and any other
// language can reproduce it. A value of n below 1 counts as 1.
//
// The finalizer matters: FNV-1a's low bits depend only on the low bits of
// each byte, so without it keys that differ in trailing digits (time keys,
// sequence numbers) crowd into a few buckets when n is a power of two.
//
// It serves the guide's prepend/append anti-pattern: "When you have a high
// volume of inserts, increase scalability by spreading the inserts across
// multiple partitions". Writes are spread over n partitions; a query for
// everything reads all of them (BucketKeys) and merges.
func Bucket(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(fmix32(h.Sum32()) % uint32(n))
}

// fmix32 is MurmurHash3's finalizer: every input bit affects every output
// bit.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// BucketKey returns the partition key for bucket b of n under base:
// Join(base, PadUint(b, digits)), where digits is the width of n-1, so
// BucketKey("Sales", 7, 16) is "Sales_07". Every bucket key of base starts
// with Join(base, "") and they sort in bucket order.
func BucketKey(base string, b, n int) string {
	width := len(strconv.Itoa(max(n, 1) - 1))
	return Join(base, PadUint(uint64(max(b, 0)), width))
}

// BucketedKey returns the partition key of key's bucket under base:
// BucketKey(base, Bucket(key, n), n).
func BucketedKey(base, key string, n int) string {
	return BucketKey(base, Bucket(key, n), n)
}

// BucketKeys lists the partition keys of all n buckets under base, in
// bucket order, for fan-out queries that read every bucket.
func BucketKeys(base string, n int) []string {
	n = max(n, 1)
	out := make([]string, n)
	for i := range out {
		out[i] = BucketKey(base, i, n)
	}
	return out
}
