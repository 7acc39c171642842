package cliconn

import "strconv"

// Count writes n and a noun, singular for 1 and plural otherwise ("1
// entity", "2 entities", "0 tables"), as the commands' sentences say it.
// A noun whose plural only adds "s" gives many as "".
func Count[N ~int | ~int32 | ~int64](n N, one, many string) string {
	if many == "" {
		many = one + "s"
	}
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(int64(n), 10) + " " + many
}
