package azrules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/azrules"
)

// check is one case of a check function: the input and the kind of error
// expected (nil: accepted).
type check struct {
	name string
	in   string
	want error
}

func runChecks(t *testing.T, fn func(string) error, cases []check) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := fn(c.in)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("%.40q: got %v, want nil", c.in, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("%.40q: got %v, want an error wrapping %v", c.in, err, c.want)
			case err != nil && err.Error() == "":
				t.Fatalf("%.40q: the error says nothing", c.in)
			}
		})
	}
}

func TestCheckTableName(t *testing.T) {
	runChecks(t, azrules.CheckTableName, []check{
		{"shortest", "abc", nil},
		{"longest", "a" + strings.Repeat("1", 62), nil},
		{"mixed case", "OrdersV2", nil},
		{"too short", "ab", azrules.ErrLength},
		{"too long", "a" + strings.Repeat("1", 63), azrules.ErrLength},
		{"empty", "", azrules.ErrLength},
		{"digit first", "1abc", azrules.ErrCharacter},
		{"hyphen", "ab-c", azrules.ErrCharacter},
		{"non-ASCII", "tablé", azrules.ErrCharacter},
		{"reserved", "tables", azrules.ErrForm},
		{"reserved in any case", "TaBlEs", azrules.ErrForm},
		{"reserved as a prefix only", "tables1", nil},
	})
}

func TestCheckKey(t *testing.T) {
	runChecks(t, azrules.CheckKey, []check{
		{"empty", "", nil},
		{"plain", "order-0001_x.y", nil},
		{"512 units", strings.Repeat("k", 512), nil},
		{"513 units", strings.Repeat("k", 513), azrules.ErrLength},
		{"256 astral characters", strings.Repeat("😀", 256), nil},
		{"257 astral characters are 514 units", strings.Repeat("😀", 257), azrules.ErrLength},
		{"512 BMP characters of 3 bytes", strings.Repeat("語", 512), nil},
		{"slash", "a/b", azrules.ErrCharacter},
		{"backslash", `a\b`, azrules.ErrCharacter},
		{"hash", "a#b", azrules.ErrCharacter},
		{"question mark", "a?b", azrules.ErrCharacter},
		{"tab", "a\tb", azrules.ErrCharacter},
		{"DEL", "a\x7fb", azrules.ErrCharacter},
		{"C1 control", "a\u0085b", azrules.ErrCharacter},
		{"U+00A0 is allowed", "a\u00a0b", nil},
		{"invalid UTF-8", "a\xffb", azrules.ErrForm},
		{"a character refused before the length", strings.Repeat("k", 600) + "/", azrules.ErrCharacter},
	})
}

func TestCheckPropertyName(t *testing.T) {
	runChecks(t, azrules.CheckPropertyName, []check{
		{"plain", "Name", nil},
		{"underscore first", "_x1", nil},
		{"Unicode letters", "Größe", nil},
		{"letter number first", "Ⅻx", nil},
		{"combining mark after", "e\u0301", nil},
		{"system names are names", "PartitionKey", nil},
		{"255 units", strings.Repeat("a", 255), nil},
		{"256 units", strings.Repeat("a", 256), azrules.ErrLength},
		{"astral letters count two", strings.Repeat("𝐀", 128), azrules.ErrLength},
		{"empty", "", azrules.ErrLength},
		{"digit first", "1a", azrules.ErrCharacter},
		{"combining mark first", "\u0301e", azrules.ErrCharacter},
		{"hyphen", "a-b", azrules.ErrCharacter},
		{"space", "a b", azrules.ErrCharacter},
		{"dollar", "$x", azrules.ErrCharacter},
		{"invalid UTF-8", "a\xff", azrules.ErrForm},
	})
}

func TestIsIdentifier(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"a", true}, {"_", true}, {"a1", true}, {"Größe", true}, {"", false}, {"1a", false},
		{"a-b", false}, {"a.b", false}, {"a b", false}, {"@", false}, {"[", false}, {"`", false},
	} {
		if got := azrules.IsIdentifier(c.in); got != c.want {
			t.Errorf("IsIdentifier(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestIsSystemProperty(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"PartitionKey", true}, {"RowKey", true}, {"Timestamp", true},
		{"partitionkey", false}, {"ETag", false}, {"Name", false},
	} {
		if got := azrules.IsSystemProperty(c.in); got != c.want {
			t.Errorf("IsSystemProperty(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestCheckString(t *testing.T) {
	runChecks(t, azrules.CheckString, []check{
		{"empty", "", nil},
		{"32 Ki ASCII", strings.Repeat("a", 32*1024), nil},
		{"32 Ki + 1 ASCII", strings.Repeat("a", 32*1024+1), azrules.ErrLength},
		{"32 Ki three-byte characters are 32 Ki units", strings.Repeat("語", 32*1024), nil},
		{"16 Ki + 1 astral characters", strings.Repeat("😀", 16*1024+1), azrules.ErrLength},
	})
}

// checkInt is one case of a check of a number.
type checkInt struct {
	in   int
	want error
}

func runIntChecks(t *testing.T, name string, fn func(int) error, cases []checkInt) {
	t.Helper()
	for _, c := range cases {
		err := fn(c.in)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s(%d) = %v, want %v", name, c.in, err, c.want)
		}
	}
}

func TestCheckSizes(t *testing.T) {
	runIntChecks(t, "CheckBinary", azrules.CheckBinary, []checkInt{{0, nil}, {64 << 10, nil}, {64<<10 + 1, azrules.ErrLength}})
	runIntChecks(t, "CheckPropertyCount", azrules.CheckPropertyCount, []checkInt{{0, nil}, {252, nil}, {253, azrules.ErrLength}})
	runIntChecks(t, "CheckEntitySize", azrules.CheckEntitySize, []checkInt{{0, nil}, {1 << 20, nil}, {1<<20 + 1, azrules.ErrLength}})
	runIntChecks(t, "CheckBatchOperations", azrules.CheckBatchOperations, []checkInt{{0, nil}, {100, nil}, {101, azrules.ErrLength}})
	runIntChecks(t, "CheckFilterComparisons", azrules.CheckFilterComparisons, []checkInt{{15, nil}, {16, azrules.ErrLength}})
	runIntChecks(t, "CheckMessageSize", azrules.CheckMessageSize, []checkInt{{64 << 10, nil}, {64<<10 + 1, azrules.ErrLength}})
	runIntChecks(t, "CheckMetadataSize", azrules.CheckMetadataSize, []checkInt{{8 << 10, nil}, {8<<10 + 1, azrules.ErrLength}})
	storage := func(n int) error { return azrules.CheckBatchBytes(n, false) }
	cosmos := func(n int) error { return azrules.CheckBatchBytes(n, true) }
	runIntChecks(t, "CheckBatchBytes(storage)", storage, []checkInt{{4 << 20, nil}, {4<<20 + 1, azrules.ErrLength}})
	runIntChecks(t, "CheckBatchBytes(cosmos)", cosmos, []checkInt{{2 << 20, nil}, {2<<20 + 1, azrules.ErrLength}})
}

func TestCheckTop(t *testing.T) {
	runChecks(t, azrules.CheckTop, []check{
		{"one", "1", nil},
		{"1000", "1000", nil},
		{"1001", "1001", azrules.ErrLength},
		{"zero", "0", nil},
		{"negative", "-5", azrules.ErrLength},
		{"not a number", "ten", azrules.ErrForm},
		{"empty", "", azrules.ErrForm},
		{"fraction", "1.5", azrules.ErrForm},
	})
}

func TestCheckQueueAndContainerName(t *testing.T) {
	cases := []check{
		{"shortest", "abc", nil},
		{"longest", strings.Repeat("a", 63), nil},
		{"digits and single hyphens", "my-queue-01", nil},
		{"digit first", "1queue", nil},
		{"too short", "ab", azrules.ErrLength},
		{"too long", strings.Repeat("a", 64), azrules.ErrLength},
		{"empty", "", azrules.ErrLength},
		{"uppercase", "Queue", azrules.ErrCharacter},
		{"hyphen first", "-abc", azrules.ErrCharacter},
		{"hyphen last", "abc-", azrules.ErrCharacter},
		{"two hyphens", "a--b", azrules.ErrCharacter},
		{"underscore", "a_b", azrules.ErrCharacter},
		{"dollar", "$logs", azrules.ErrCharacter},
	}
	t.Run("queue", func(t *testing.T) { runChecks(t, azrules.CheckQueueName, cases) })
	t.Run("container", func(t *testing.T) { runChecks(t, azrules.CheckContainerName, cases) })
}

func TestCheckBlobName(t *testing.T) {
	runChecks(t, azrules.CheckBlobName, []check{
		{"plain", "a/b/c.txt", nil},
		{"empty segments", "a//b", nil},
		{"1024 units", strings.Repeat("b", 1024), nil},
		{"1025 units", strings.Repeat("b", 1025), azrules.ErrLength},
		{"512 astral characters", strings.Repeat("😀", 512), nil},
		{"513 astral characters", strings.Repeat("😀", 513), azrules.ErrLength},
		{"1024 three-byte characters", strings.Repeat("語", 1024), nil},
		{"254 segments", strings.Repeat("a/", 253) + "a", nil},
		{"255 segments", strings.Repeat("a/", 254) + "a", azrules.ErrLength},
		{"empty", "", azrules.ErrLength},
		{"backslash", `a\b`, azrules.ErrCharacter},
		{"question mark", "a?b", azrules.ErrCharacter},
		{"hash", "a#b", azrules.ErrCharacter},
		{"control", "a\x01b", azrules.ErrCharacter},
		{"dot segment", "a/./b", azrules.ErrForm},
		{"dot-dot last", "a/..", azrules.ErrForm},
		{"trailing slash", "a/", azrules.ErrForm},
		{"invalid UTF-8", "a\xff", azrules.ErrForm},
	})
}

func TestCheckBlobNameLength(t *testing.T) {
	runChecks(t, azrules.CheckBlobNameLength, []check{
		{"1024 units", strings.Repeat("b", 1024), nil},
		{"1025 units", strings.Repeat("b", 1025), azrules.ErrLength},
		{"513 astral characters", strings.Repeat("😀", 513), azrules.ErrLength},
		{"characters the full rule refuses", "a?b/./", nil},
		{"empty", "", azrules.ErrLength},
	})
}

func TestCheckMetadataName(t *testing.T) {
	runChecks(t, azrules.CheckMetadataName, []check{
		{"plain", "owner", nil},
		{"canonical header case", "Owner_2", nil},
		{"empty", "", azrules.ErrLength},
		{"hyphen", "my-name", azrules.ErrCharacter},
		{"digit first", "2x", azrules.ErrCharacter},
	})
}

func TestUTF16Len(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 3}, {"é", 1}, {"語", 1}, {"😀", 2}, {"a😀b", 4}, {"\xff", 1}, {"a\xff\xfeb", 4},
	} {
		if got := azrules.UTF16Len(c.in); got != c.want {
			t.Errorf("UTF16Len(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestServiceVersions: the list is sorted and without repeats
// (IsServiceVersion searches it), ends at NewestServiceVersion, and
// refuses what Azure refuses.
func TestServiceVersions(t *testing.T) {
	v := azrules.ServiceVersions()
	for i := 1; i < len(v); i++ {
		if v[i-1] >= v[i] {
			t.Fatalf("versions %q and %q out of order", v[i-1], v[i])
		}
	}
	if v[len(v)-1] != azrules.NewestServiceVersion {
		t.Errorf("last version %q, want NewestServiceVersion %q", v[len(v)-1], azrules.NewestServiceVersion)
	}
	for _, ok := range v {
		if !azrules.IsServiceVersion(ok) {
			t.Errorf("IsServiceVersion(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "junk", "2099-01-01", "2019-02-03", "2019-02-02 "} {
		if azrules.IsServiceVersion(bad) {
			t.Errorf("IsServiceVersion(%q) = true", bad)
		}
	}
}
