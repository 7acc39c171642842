package testenv

import (
	"fmt"
	"math/rand/v2"
)

// Layout is a key layout that work on whole tables (a parallel scan, a
// copy, a backup) must read exactly: Keys returns the (PartitionKey,
// RowKey) pairs to store, the same ones on every call.
type Layout struct {
	Name string
	Keys func() [][2]string
}

// Layouts are the skewed key layouts of the work on whole tables: half in
// one partition, hundreds of tiny partitions, GUIDs, long shared prefixes,
// non-ASCII keys (ordered by UTF-16 code units, not bytes), and the
// benchmarks' mix of the first three (SkewedKeys).
//
// Each is as small as its shape allows, 600 to 1,200 keys: what the tests
// prove on them (every key read once while a parallel scan splits its
// ranges, pages ending early and empty, a copy resumed from its
// checkpoint) takes tens of pages of 100, not thousands of keys, and the
// tests check that it happened (the scan split into two ranges or more,
// pages did end early, some empty), so a layout too small to show it
// fails rather than passes.
var Layouts = []Layout{
	{"one partition holds half", func() [][2]string {
		var ks [][2]string
		for i := range 500 {
			ks = append(ks, [2]string{"hot", fmt.Sprintf("%06d", i)})
		}
		for i := range 500 {
			ks = append(ks, [2]string{fmt.Sprintf("p%04d", i%50), fmt.Sprintf("%06d", i)})
		}
		return ks
	}},
	{"hundreds of tiny partitions", func() [][2]string {
		r := rand.New(rand.NewPCG(1, 2))
		seen := map[uint32]bool{}
		var ks [][2]string
		for len(ks) < 600 {
			if v := r.Uint32(); !seen[v] {
				seen[v] = true
				ks = append(ks, [2]string{fmt.Sprintf("%08x", v), "only"})
			}
		}
		return ks
	}},
	{"GUID keys", func() [][2]string {
		r := rand.New(rand.NewPCG(3, 4))
		guid := func() string {
			return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&(1<<48-1))
		}
		var ks [][2]string
		for range 25 {
			pk := guid()
			for range 25 {
				ks = append(ks, [2]string{pk, guid()})
			}
		}
		return ks
	}},
	{"a long shared prefix", func() [][2]string {
		var ks [][2]string
		for i := range 600 {
			ks = append(ks, [2]string{fmt.Sprintf("tenant-0000000000000000000000000042-shard-%03d", i/150), fmt.Sprintf("user-0000000000000000-%08d", i)})
		}
		return ks
	}},
	{"non-ASCII keys", func() [][2]string {
		chars := []string{"a", "é", "中", "\uE000", "\uFFFD", "😀", "𝄞", "Ω", "ß", "\u0800"}
		var ks [][2]string
		// 1,000 keys: every pair of characters in PartitionKeys, every
		// character first in RowKeys.
		for i := range 1000 {
			pk := chars[i%len(chars)] + chars[(i/10)%len(chars)]
			rk := chars[(i/100)%len(chars)] + fmt.Sprintf("%04d", i) + chars[i%7]
			ks = append(ks, [2]string{pk, rk})
		}
		return ks
	}},
	{"skewed", func() [][2]string { return SkewedKeys(1200) }},
}

// SkewedKeys returns n keys in the benchmarks' skewed layout, in this key
// order:
//   - a quarter in tiny partitions of 10 rows, PartitionKeys spread over
//     8 hex digits;
//   - half in one partition, "hot", whose RowKeys share a 21-character
//     prefix;
//   - a quarter in 10 partitions whose PartitionKeys share a 42-character
//     prefix.
func SkewedKeys(n int) [][2]string {
	ks := make([][2]string, 0, n)
	tiny, hot := n/4, n/2
	for i := range tiny {
		// Partition i/10, its number scattered by a multiplicative hash.
		pk := fmt.Sprintf("%08x", uint32(i/10)*2654435761)
		ks = append(ks, [2]string{pk, fmt.Sprintf("%02d", i%10)})
	}
	for i := range hot {
		ks = append(ks, [2]string{"hot", fmt.Sprintf("user-0000000000000000-%08d", i)})
	}
	shared := n - tiny - hot
	for i := range shared {
		ks = append(ks, [2]string{fmt.Sprintf("tenant-0000000000000000000000000042-shard-%03d", i*10/shared), fmt.Sprintf("%08d", i)})
	}
	return ks
}
