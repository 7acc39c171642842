package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// demoTable and demoCopy are the example table the tablekit command
// exports and imports, and the copy it imports into.
const (
	demoTable = "DemoEmployees"
	demoCopy  = "DemoEmployeesCopy"
)

// tablekitDemo shows the tablekit command: it fills an example table with
// entities holding every EDM type, builds cmd/tablekit, exports the table,
// imports the export into a new table, and checks that the copy's entities
// are identical to the original's.
func tablekitDemo(ctx context.Context, connStr string) (err error) {
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		return err
	}
	src, err := patterns.NewTable[entity.Entity](acct, demoTable, nil)
	if err != nil {
		return err
	}
	dst, err := patterns.NewTable[entity.Entity](acct, demoCopy, nil)
	if err != nil {
		return err
	}
	if err := src.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, src.Drop(ctx, nil), dst.Drop(ctx, nil)) }()
	var rows []entity.Entity
	hired := time.Date(2012, 3, 4, 9, 30, 15, 123456700, time.UTC)
	for i, dept := range []string{"Sales", "Sales", "Sales", "Marketing", "Marketing", "Engineering"} {
		rows = append(rows, entity.Entity{PartitionKey: dept, RowKey: fmt.Sprintf("%06d", 100+i), Properties: map[string]entity.Value{
			"Name":     entity.String(fmt.Sprintf("Employee %d", i)),
			"Age":      entity.Int32(int32(30 + i)),
			"BadgeID":  entity.Int64(1<<53 + int64(i) + 1), // not a float64
			"Salary":   entity.Double(3000.0),              // stays a Double
			"Hired":    entity.DateTime(hired.Add(time.Duration(i) * 100)),
			"Active":   entity.Bool(i%2 == 0),
			"ID":       entity.Guid(entity.NewGUID()),
			"Photo":    entity.Binary([]byte{0xff, 0xd8, 0xff, byte(i)}),
			"Ratio":    entity.Double(0.1 * float64(i)),
			"Contract": entity.String("permanent"),
		}})
	}
	if _, err := src.BulkWrite(ctx, rows, nil); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "tablekit-demo-cli-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tablekit")
	fmt.Println("demo: building ./cmd/tablekit")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tablekit")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build tablekit: %w", err)
	}
	export := filepath.Join(dir, "employees.jsonl")
	steps := [][]string{
		{"count", demoTable},
		{"query", demoTable, "PartitionKey eq 'Sales' and RowKey ge '000101'", "--format", "table", "--select", "Name,BadgeID,Salary,Hired", "--explain"},
		{"export", demoTable},
		{"import", demoCopy, export},
		{"count", demoCopy},
	}
	for _, args := range steps {
		fmt.Printf("$ tablekit %s\n", shellJoin(args))
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), tablekit.EnvConnectionString+"="+connStr)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stdout
		if args[0] != "export" {
			cmd.Stdout = os.Stdout
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("tablekit %s: %w", args[0], err)
		}
		if args[0] == "export" {
			first, _, _ := bytes.Cut(out.Bytes(), []byte("\n"))
			fmt.Printf("%s\n(%d lines written to %s)\n", first, bytes.Count(out.Bytes(), []byte("\n")), filepath.Base(export))
			if err := os.WriteFile(export, out.Bytes(), 0o600); err != nil {
				return err
			}
		}
	}

	all := &patterns.QueryOptions{SelectAll: true, AllowTableScan: true}
	want, err := patterns.Collect(src.Query(ctx, keys.Filter{}, all))
	if err != nil {
		return err
	}
	got, err := patterns.Collect(dst.Query(ctx, keys.Filter{}, all))
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("the copy holds %d entities, the original %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.PartitionKey != w.PartitionKey || g.RowKey != w.RowKey || len(g.Properties) != len(w.Properties) {
			return fmt.Errorf("entity %d differs: copy (%q, %q) %v, original (%q, %q) %v", i, g.PartitionKey, g.RowKey, g.Properties, w.PartitionKey, w.RowKey, w.Properties)
		}
		for name, v := range w.Properties {
			if !v.Equal(g.Properties[name]) {
				return fmt.Errorf("entity (%q, %q) property %s: copy %v, original %v", w.PartitionKey, w.RowKey, name, g.Properties[name], v)
			}
		}
	}
	fmt.Printf("demo: %s and %s hold identical entities (every EDM type)\n", demoTable, demoCopy)
	return nil
}

// shellJoin quotes the arguments that need it, for display.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " '\"*$") {
			a = `"` + a + `"`
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
