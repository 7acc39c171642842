package testenv

import (
	"fmt"
	"math"
	"time"

	"github.com/tablekit/tablekit/entity"
)

// EveryType is entity i of a test table: each EDM type at the values that
// break naive codecs (a 64-bit integer past 2^53, NaN, -Inf, 1e300, a
// DateTime on February 29 with 100 ns precision, the year 1601,
// 300 bytes of binary, quotes, a newline and non-ASCII text) and the
// properties tablekit itself stores (Tk*). Whatever copies, backs up or
// exports a table must give these back exactly.
func EveryType(pk, rk string, i int) entity.Entity {
	g, _ := entity.ParseGUID("01234567-89ab-cdef-0123-456789abcdef")
	bin := make([]byte, 300)
	for j := range bin {
		bin[j] = byte(i + j)
	}
	return entity.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]entity.Value{
		"Str":       entity.String(fmt.Sprintf("line\n\"quoted\" ünïcödé 🙂 %d", i)),
		"Int32":     entity.Int32(math.MinInt32 + int32(i)),
		"Int64":     entity.Int64(1<<53 + 1 + int64(i)),
		"Int64Max":  entity.Int64(math.MaxInt64),
		"Whole":     entity.Double(3.0),
		"Frac":      entity.Double(0.1 + float64(i)),
		"Huge":      entity.Double(1e300),
		"NaN":       entity.Double(math.NaN()),
		"Inf":       entity.Double(math.Inf(-1)),
		"Bool":      entity.Bool(i%2 == 0),
		"When":      entity.DateTime(time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC).Add(time.Duration(i) * 100)),
		"Old":       entity.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)),
		"ID":        entity.Guid(g),
		"Bin":       entity.Binary(bin),
		"TkUpdates": entity.String(fmt.Sprintf("w%d", i)),
		"TkChunks":  entity.Int32(int32(i % 3)),
	}}
}
