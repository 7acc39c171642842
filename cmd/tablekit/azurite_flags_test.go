package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
)

// emulatorOptions parses args as "tablekit emulator" does and returns the
// options it would start the emulator with.
func emulatorOptions(t *testing.T, args []string, env map[string]string) (emulator.Options, error) {
	t.Helper()
	a := &app{}
	var cmd *command
	for _, c := range a.commands() {
		if c.name == "emulator" {
			cmd = c
		}
	}
	if cmd == nil {
		t.Fatal("no emulator command")
	}
	if _, err := parseInterleaved(a.flagSet(cmd), args); err != nil {
		return emulator.Options{}, err
	}
	return a.emu.options(func(k string) string { return env[k] })
}

// Azurite's command lines, as its README and tablekit's harness write
// them, give the same options as tablekit's own flag names.
func TestAzuriteCommandLine(t *testing.T) {
	cases := []struct {
		name            string
		azurite, native string
		env             map[string]string
	}{
		{
			// Azurite's README, "Run Azurite V3 docker image" (without -l
			// and -d, which other commands' flags cover).
			name:    "README docker line",
			azurite: "--blobPort 7777 --blobHost 0.0.0.0 --blobKeepAliveTimeout 5 --queuePort 8888 --queueHost 0.0.0.0 --queueKeepAliveTimeout 5 --tablePort 9999 --tableHost 0.0.0.0 --tableKeepAliveTimeout 5 --loose --skipApiVersionCheck --disableProductStyleUrl --disableTelemetry",
			native:  "--host 0.0.0.0 --blob-port 7777 --queue-port 8888 --table-port 9999 --skipApiVersionCheck",
		},
		{
			name:    "the harness's line, memory only",
			azurite: "--inMemoryPersistence --skipApiVersionCheck --disableTelemetry --blobHost 127.0.0.1 --blobPort 0 --queueHost 127.0.0.1 --queuePort 0 --tableHost 127.0.0.1 --tablePort 0",
			native:  "--skipApiVersionCheck --blob-port 0 --queue-port 0 --table-port 0",
		},
		{
			name:    "short loose, a memory limit",
			azurite: "-L --inMemoryPersistence --extentMemoryLimit 50",
			native:  "",
		},
		{
			name:    "AZURITE_ACCOUNTS",
			azurite: "--tablePort 20002",
			native:  "--table-port 20002",
			env:     map[string]string{emulator.AccountsEnv: "account1:a2V5MQ==:a2V5Mg==;account2:a2V5Mw=="},
		},
	}
	for _, c := range []struct {
		env  string
		flag bool
		want bool
	}{
		{"true", false, true},
		{"", false, false},
		{"TRUE", false, false}, // only the exact value, as Azurite's README says
		{"1", false, false},
		{"false", true, true}, // the flag wins, whatever the variable says
	} {
		var args []string
		if c.flag {
			args = []string{"--skipApiVersionCheck"}
		}
		o, err := emulatorOptions(t, args, map[string]string{emulator.SkipAPIVersionCheckEnv: c.env})
		if err != nil || o.SkipAPIVersionCheck != c.want {
			t.Errorf("%s=%q, flag %v: SkipAPIVersionCheck %v (%v), want %v", emulator.SkipAPIVersionCheckEnv, c.env, c.flag, o.SkipAPIVersionCheck, err, c.want)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			az, err := emulatorOptions(t, strings.Fields(c.azurite), c.env)
			if err != nil {
				t.Fatalf("Azurite's flags %q: %v", c.azurite, err)
			}
			native, err := emulatorOptions(t, strings.Fields(c.native), c.env)
			if err != nil {
				t.Fatalf("tablekit's flags %q: %v", c.native, err)
			}
			if !reflect.DeepEqual(az, native) {
				t.Errorf("Azurite's flags give\n%+v\ntablekit's give\n%+v", az, native)
			}
		})
	}
	// The defaults are Azurite's: 127.0.0.1 and ports 10000 to 10002.
	o, err := emulatorOptions(t, nil, nil)
	if err != nil || o.Host != "127.0.0.1" || o.BlobPort != 10000 || o.QueuePort != 10001 || o.TablePort != 10002 || o.AccountName != emulator.DevAccountName {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, _ = emulatorOptions(t, nil, map[string]string{emulator.AccountsEnv: "account1:a2V5MQ==;account2:a2V5Mw=="})
	if len(o.Accounts) != 2 || o.Accounts[1].Name != "account2" || o.AccountName != "" {
		t.Errorf("AZURITE_ACCOUNTS: %+v", o)
	}
}

// Flags tablekit cannot honour together are usage errors naming them.
func TestAzuriteCommandLineConflicts(t *testing.T) {
	cases := []struct {
		args  string
		env   map[string]string
		names []string
	}{
		{"--blobHost 0.0.0.0 --tableHost 127.0.0.1", nil, []string{"--blobHost", "--tableHost"}},
		{"--host 127.0.0.1 --queueHost 0.0.0.0", nil, []string{"--host", "--queueHost"}},
		{"--extentMemoryLimit 10", nil, []string{"--extentMemoryLimit", "--inMemoryPersistence"}},
		{"--account other", map[string]string{emulator.AccountsEnv: "account1:a2V5MQ=="}, []string{emulator.AccountsEnv, "--account"}},
		{"", map[string]string{emulator.AccountsEnv: "account1"}, []string{emulator.AccountsEnv}},
	}
	for _, c := range cases {
		_, err := emulatorOptions(t, strings.Fields(c.args), c.env)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q (env %v): %v; want a usage error", c.args, c.env, err)
			continue
		}
		for _, n := range c.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("%q: %q does not name %s", c.args, err, n)
			}
		}
	}
}

// The throttle's shape from the command line: --throttle alone is Azure's
// targets and burst; --throttle-partition, --throttle-account and
// --throttle-burst set them and turn the throttle on; with --scale they
// are the model's (scaled as its every rate). A burst that is not
// positive, or no target left, is a usage error.
func TestEmulatorThrottleFlags(t *testing.T) {
	for _, c := range []struct {
		args  string
		want  *emulator.ThrottleOptions
		scale bool
	}{
		{"", nil, false},
		{"--throttle", &emulator.ThrottleOptions{}, false},
		{"--throttle-partition 500 --throttle-burst 3s", &emulator.ThrottleOptions{PartitionEntitiesPerSecond: 500, Burst: 3 * time.Second}, false},
		{"--throttle --throttle-account -1 --throttle-partition 300", &emulator.ThrottleOptions{PartitionEntitiesPerSecond: 300, AccountEntitiesPerSecond: -1}, false},
		{"--throttle-account 5000 --throttle-burst 100ms", &emulator.ThrottleOptions{AccountEntitiesPerSecond: 5000, Burst: 100 * time.Millisecond}, false},
		{"--scale 0.25 --throttle-burst 2s", &emulator.ThrottleOptions{Burst: 2 * time.Second}, true},
	} {
		o, err := emulatorOptions(t, strings.Fields(c.args), nil)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(o.Throttle, c.want) || (o.Scale != nil) != c.scale {
			t.Errorf("%q: Throttle %+v, Scale %+v; want %+v, scale %v", c.args, o.Throttle, o.Scale, c.want, c.scale)
		}
	}
	for _, args := range []string{
		"--throttle-burst 0s",
		"--throttle --throttle-burst -1s",
		"--throttle-partition -1 --throttle-account -1",
	} {
		_, err := emulatorOptions(t, strings.Fields(args), nil)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v; want a usage error", args, err)
		}
	}
}

// --clock-rate sets Options.ClockRate; a rate below 1, above
// emulator.MaxClockRate or not a number is a usage error naming the flag.
func TestEmulatorClockRateFlag(t *testing.T) {
	for args, want := range map[string]float64{"": 0, "--clock-rate 50": 50, "--clock-rate 1": 1} {
		o, err := emulatorOptions(t, strings.Fields(args), nil)
		if err != nil || o.ClockRate != want {
			t.Errorf("%q: ClockRate %v, %v; want %v", args, o.ClockRate, err, want)
		}
	}
	for _, args := range []string{"--clock-rate 0.5", "--clock-rate 0", "--clock-rate -2", "--clock-rate 10001", "--clock-rate NaN"} {
		_, err := emulatorOptions(t, strings.Fields(args), nil)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--clock-rate") {
			t.Errorf("%q: %v; want a usage error naming --clock-rate", args, err)
		}
	}
}
