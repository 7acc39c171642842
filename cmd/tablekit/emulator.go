package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/tablekit/tablekit/emulator"
)

// emulatorSummary is what emulator --json prints once it listens.
type emulatorSummary struct {
	Command          string `json:"command"` // "emulator"
	OK               bool   `json:"ok"`
	ConnectionString string `json:"connectionString"` // the development account's: its key is well known
	Table            string `json:"table"`
	Queue            string `json:"queue"`
	Blob             string `json:"blob"`
}

// emulatorFlags are the flags of "tablekit emulator": emulator.Options.
type emulatorFlags struct {
	opts         emulator.Options
	earlyEnd     float64
	earlyEndSeed int64
	throttle     bool
	scale        float64
}

func (f *emulatorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.opts.Host, "host", "127.0.0.1", "address the services listen on")
	fs.IntVar(&f.opts.BlobPort, "blob-port", emulator.DefaultBlobPort, "Blob service port (0: any free port)")
	fs.IntVar(&f.opts.QueuePort, "queue-port", emulator.DefaultQueuePort, "Queue service port (0: any free port)")
	fs.IntVar(&f.opts.TablePort, "table-port", emulator.DefaultTablePort, "Table service port (0: any free port)")
	fs.StringVar(&f.opts.AccountName, "account", emulator.DevAccountName, "account name")
	fs.StringVar(&f.opts.AccountKey, "key", "", "account key, base64 (default: the development account's well-known key)")
	fs.BoolVar(&f.opts.Cosmos, "cosmos", false, "answer as the Cosmos DB Table API does (its name and size rules, unsorted results)")
	fs.BoolVar(&f.opts.SkipAPIVersionCheck, "skipApiVersionCheck", false, "serve any x-ms-version, as Azurite's flag of that name does (default: 400 InvalidHeaderValue for a version after "+emulator.NewestServiceVersion+" or unpublished)")
	fs.Float64Var(&f.earlyEnd, "early-end", 0, "probability (0 to 1) that a query page ends early with a continuation, as Azure's may")
	fs.Int64Var(&f.earlyEndSeed, "seed", 1, "seed of --early-end's choices")
	fs.DurationVar(&f.opts.Latency, "latency", 0, "delay added to every Table service request, as if across a network")
	fs.BoolVar(&f.throttle, "throttle", false, "answer 503 ServerBusy over Azure's targets (2,000 entities/s a partition, 20,000 an account)")
	fs.Float64Var(&f.scale, "scale", 0, "run the scale model (partition servers, page service times, Azure's targets) with every rate multiplied by this (1: Azure's; 0: no model)")
}

// cmdEmulator runs the emulator until ctx ends (SIGTERM, Ctrl-C).
func (a *app) cmdEmulator(ctx context.Context, _ []string) error {
	o := a.emu.opts
	if a.emu.earlyEnd < 0 || a.emu.earlyEnd > 1 {
		return usagef("--early-end %v: want a probability from 0 to 1", a.emu.earlyEnd)
	}
	if a.emu.earlyEnd > 0 {
		o.EarlyEnd = &emulator.EarlyEnd{Seed: a.emu.earlyEndSeed, Probability: a.emu.earlyEnd}
	}
	if a.emu.scale < 0 {
		return usagef("--scale %v: want a positive factor, or 0 for no model", a.emu.scale)
	}
	if a.emu.throttle {
		o.Throttle = &emulator.ThrottleOptions{}
	}
	if a.emu.scale > 0 {
		o.Scale = &emulator.ScaleOptions{Scale: a.emu.scale}
	}
	inst, err := emulator.Start(ctx, &o)
	if err != nil {
		return err
	}
	defer inst.Stop()
	if a.json {
		// Not cliconn.JSONLine: it redacts, and the connection string is
		// what the user asked for, key included, as without --json.
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(emulatorSummary{Command: "emulator", OK: true, ConnectionString: inst.ConnectionString,
			Table: inst.TableURL, Queue: inst.QueueURL, Blob: inst.BlobURL}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.stdout, inst.ConnectionString)
	}
	fmt.Fprintf(a.stderr, "tablekit emulator: Table %s, Queue %s, Blob %s; stop with Ctrl-C or SIGTERM\n", inst.TableURL, inst.QueueURL, inst.BlobURL)
	<-ctx.Done()
	fmt.Fprintln(a.stderr, "tablekit emulator: stopping")
	return nil
}
