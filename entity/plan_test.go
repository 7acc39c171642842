package entity_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// The service counts a property name's length in UTF-16 code units, so a
// name of letters outside the Basic Multilingual Plane reaches the limit
// at half as many characters.
func TestPropertyNameLengthCountsUTF16Units(t *testing.T) {
	const astral = "\U0001D400" // MATHEMATICAL BOLD CAPITAL A: a letter, two UTF-16 code units
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("é", 255), true},                 // 255 BMP letters: 255 units
		{strings.Repeat("é", 256), false},                // 256 units
		{strings.Repeat(astral, 127) + "a", true},        // 255 units in 128 characters
		{strings.Repeat(astral, 128), false},             // 256 units in 128 characters
		{strings.Repeat(astral, 200), false},             // 400 units in 200 characters
		{"_" + strings.Repeat(astral, 127), true},        // 255 units
		{"_" + strings.Repeat(astral, 127) + "b", false}, // 256 units
	} {
		// Every path that checks a name: ValidatePropertyName, a dynamic
		// entity's Validate and Marshal, and a struct tag at codec build.
		err := entity.ValidatePropertyName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("ValidatePropertyName(%d runes) = %v, want ok=%v", len([]rune(c.name)), err, c.ok)
		}
		if err != nil && !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("ValidatePropertyName(%d runes) = %v, want ErrInvalidEntity", len([]rune(c.name)), err)
		}
		e := entity.Entity{PartitionKey: "p", RowKey: "r"}
		e.Set(c.name, entity.Int32(1))
		if err := e.Validate(); (err == nil) != c.ok {
			t.Errorf("Entity.Validate with a name of %d runes = %v, want ok=%v", len([]rune(c.name)), err, c.ok)
		}
		if _, err := e.MarshalJSON(); (err == nil) != c.ok {
			t.Errorf("Entity.MarshalJSON with a name of %d runes = %v, want ok=%v", len([]rune(c.name)), err, c.ok)
		}
		typ := reflect.StructOf([]reflect.StructField{
			{Name: "PartitionKey", Type: reflect.TypeFor[string]()},
			{Name: "RowKey", Type: reflect.TypeFor[string]()},
			{Name: "V", Type: reflect.TypeFor[int32](), Tag: reflect.StructTag(`table:"` + c.name + `"`)},
		})
		if _, err := entity.CodecOf(typ, nil); (err == nil) != c.ok {
			t.Errorf("CodecOf with a tag name of %d runes = %v, want ok=%v", len([]rune(c.name)), err, c.ok)
		}
	}
}
