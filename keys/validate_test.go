package keys_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"", true},
		{"Sales", true},
		{"empid_000123_2012", true},
		{"O'Brien \u00e9\U0001F600", true},
		{strings.Repeat("a", 512), true},
		{strings.Repeat("a", 513), false},
		{strings.Repeat("\U0001F600", 256), true}, // 512 UTF-16 units
		{strings.Repeat("\U0001F600", 256) + "a", false},
		{"a/b", false},
		{`a\b`, false},
		{"a#b", false},
		{"a?b", false},
		{"a\tb", false},
		{"a\x7fb", false},
		{"a\u0085b", false},
		{"a\xffb", false},
	}
	for _, tt := range tests {
		err := keys.ValidateKey("RowKey", tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateKey(%.20q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
		if err != nil {
			var ke *keys.KeyError
			if !errors.Is(err, keys.ErrInvalidKey) || !errors.As(err, &ke) || ke.Key != "RowKey" {
				t.Errorf("ValidateKey(%.20q) error %v does not wrap ErrInvalidKey as a *KeyError for RowKey", tt.key, err)
			}
		}
	}
}

func TestValidateNames(t *testing.T) {
	tests := []struct {
		kind string
		fn   func(string) error
		name string
		ok   bool
	}{
		{"table", keys.ValidateTableName, "logs20140822", true},
		{"table", keys.ValidateTableName, "abc", true},
		{"table", keys.ValidateTableName, "ab", false},
		{"table", keys.ValidateTableName, "a" + strings.Repeat("b", 62), true},
		{"table", keys.ValidateTableName, "a" + strings.Repeat("b", 63), false},
		{"table", keys.ValidateTableName, "1abc", false},
		{"table", keys.ValidateTableName, "ab-c", false},
		{"table", keys.ValidateTableName, "Tables", false},
		{"table", keys.ValidateTableName, "tables1", true},
		{"queue", keys.ValidateQueueName, "my-queue-1", true},
		{"queue", keys.ValidateQueueName, "My-queue", false},
		{"queue", keys.ValidateQueueName, "-queue", false},
		{"queue", keys.ValidateQueueName, "queue-", false},
		{"queue", keys.ValidateQueueName, "q--ueue", false},
		{"container", keys.ValidateContainerName, "blobs", true},
		{"container", keys.ValidateContainerName, "bl", false},
	}
	for _, tt := range tests {
		err := tt.fn(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("validate %s %q = %v, want ok=%v", tt.kind, tt.name, err, tt.ok)
		}
		var ne *keys.NameError
		if err != nil && (!errors.Is(err, keys.ErrInvalidName) || !errors.As(err, &ne) || ne.Kind != tt.kind || ne.Name != tt.name) {
			t.Errorf("validate %s %q: error %v is not a *NameError for it wrapping ErrInvalidName", tt.kind, tt.name, err)
		}
	}
}
