package keys

import (
	"fmt"
	"time"
)

// Period is the time span one table of a period-table series holds.
type Period int

// The periods a table series can be split by. The table name ends in the
// period's UTC start written as digits: Hour "2014082200", Day "20140822",
// Month "201408".
const (
	Hour Period = iota + 1
	Day
	Month
)

func (p Period) layout() string {
	switch p {
	case Hour:
		return "2006010215"
	case Day:
		return "20060102"
	case Month:
		return "200601"
	}
	return ""
}

// String returns "hour", "day" or "month".
func (p Period) String() string {
	switch p {
	case Hour:
		return "hour"
	case Day:
		return "day"
	case Month:
		return "month"
	}
	return fmt.Sprintf("Period(%d)", int(p))
}

// Start returns the UTC start of the period that contains t.
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	switch p {
	case Hour:
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, time.UTC)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return t
}

// Next returns the UTC start of the period after the one that contains t.
func (p Period) Next(t time.Time) time.Time {
	s := p.Start(t)
	switch p {
	case Hour:
		return s.Add(time.Hour)
	case Day:
		return s.AddDate(0, 0, 1)
	case Month:
		return s.AddDate(0, 1, 0)
	}
	return s
}

// PeriodTable returns the name of the table that holds period p containing
// t: prefix followed by the period's UTC start as digits, so
// PeriodTable("logs", Day, t) is "logs20140822". It serves the guide's
// high volume delete pattern ("Enable the deletion of a high volume of
// entities by storing all the entities for simultaneous deletion in their
// own separate table. You delete the entities by deleting the table.").
//
// prefix must start with a letter and hold only ASCII letters and digits;
// the result must be a valid table name (3 to 63 characters). Years
// outside 1..9999 are refused. Errors wrap ErrInvalidName.
func PeriodTable(prefix string, p Period, t time.Time) (string, error) {
	if p.layout() == "" {
		return "", &NameError{Kind: "table", Name: prefix, Rule: fmt.Sprintf("unknown period %v", p)}
	}
	t = t.UTC()
	if t.Year() < 1 || t.Year() > 9999 {
		return "", &NameError{Kind: "table", Name: prefix, Rule: fmt.Sprintf("year %d is outside 1..9999", t.Year())}
	}
	name := prefix + t.Format(p.layout())
	if prefix == "" {
		return "", &NameError{Kind: "table", Name: name, Rule: "period table prefix must not be empty (table names start with a letter)"}
	}
	if err := ValidateTableName(name); err != nil {
		return "", err
	}
	return name, nil
}

// ParsePeriodTable is the inverse of PeriodTable: it returns the UTC start
// of the period the table named name holds, or an error wrapping
// ErrInvalidName if name is not prefix followed by a period of kind p.
func ParsePeriodTable(prefix string, p Period, name string) (time.Time, error) {
	layout := p.layout()
	if layout == "" {
		return time.Time{}, &NameError{Kind: "table", Name: name, Rule: fmt.Sprintf("unknown period %v", p)}
	}
	if len(name) != len(prefix)+len(layout) || name[:len(prefix)] != prefix || !allDigits(name[len(prefix):]) {
		return time.Time{}, &NameError{Kind: "table", Name: name, Rule: fmt.Sprintf("is not %q followed by a %d-digit %v", prefix, len(layout), p)}
	}
	t, err := time.ParseInLocation(layout, name[len(prefix):], time.UTC)
	if err != nil || t.Format(layout) != name[len(prefix):] {
		return time.Time{}, &NameError{Kind: "table", Name: name, Rule: fmt.Sprintf("%q is not a valid %v", name[len(prefix):], p)}
	}
	return t, nil
}

// PeriodTables lists the names of the tables of every period that overlaps
// [from, to], oldest first: the tables to query for that time span, or to
// delete when it expires. It returns an error if from is after to, if a
// name is invalid, or if the span holds more than 100,000 periods.
func PeriodTables(prefix string, p Period, from, to time.Time) ([]string, error) {
	if p.layout() == "" {
		return nil, &NameError{Kind: "table", Name: prefix, Rule: fmt.Sprintf("unknown period %v", p)}
	}
	if from.After(to) {
		return nil, &NameError{Kind: "table", Name: prefix, Rule: "period range starts after it ends"}
	}
	var out []string
	for t := p.Start(from); !t.After(to); t = p.Next(t) {
		if len(out) == 100_000 {
			return nil, &NameError{Kind: "table", Name: prefix, Rule: "period range spans more than 100000 tables"}
		}
		name, err := PeriodTable(prefix, p, t)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}
