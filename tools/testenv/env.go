package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/tools/tier"
)

// The variables that steer tablekit's tests, read here and nowhere else
// but EnvTiers, which package tier reads (the README's testing section has
// them in one table).
const (
	// EnvTarget chooses what the storage tests run on: TargetEmulator
	// (the default), TargetEarlyEnd, TargetAzurite, TargetAzuriteLenient,
	// or an account's connection string.
	EnvTarget = "TABLEKIT_TEST_TARGET"
	// EnvTiers switches on the tests that need more than Go: a
	// comma-separated list of tiers (TierAzurite, TierJS, TierPython) or
	// "all".
	// make test sets it to all.
	EnvTiers = tier.Env
	// EnvSeed replays or explores the tests' randomness (the faults the
	// fault tests inject, the differential tests' generator, where the
	// early-ending emulators end pages): an unsigned integer, or "random".
	// Unset, each test uses its own fixed seed, so a failure reproduces.
	EnvSeed = "TABLEKIT_TEST_SEED"
	// EnvAzurite is the connection string of an Azurite that the azurite
	// targets use instead of starting one per test binary (set by
	// tools/withazurite, which started it as the target has it: strict,
	// or plain for TargetAzuriteLenient). Tests that start an Azurite of
	// their own (OtherAccount, the harness's) still do.
	EnvAzurite = "TABLEKIT_TEST_AZURITE"
)

// The targets EnvTarget names; any other value holding "=" is an account's
// connection string.
const (
	// TargetEmulator is tablekit's emulator: in the test process, or in a
	// process of its own when EnvEmulatorBinary names a tablekit command.
	TargetEmulator = "emulator"
	// TargetEarlyEnd is the emulator ending query pages early, as Azure
	// may (emulator.Options.EarlyEnd, probability EarlyEndProbability,
	// seeded by EnvSeed): the tests then prove that nothing stops at a
	// short or empty page.
	TargetEarlyEnd = "emulator-early-end"
	// TargetAzurite is Azurite through the integration/azurite harness in
	// strict mode: its proxy refuses what Azure refuses and Azurite lets
	// through. It needs Node.js and `make azurite-install`.
	TargetAzurite = "azurite"
	// TargetAzuriteLenient is plain Azurite, without the strict proxy.
	TargetAzuriteLenient = "azurite-lenient"
	// targetAccount is what Target reports for a connection string.
	targetAccount = "account"
)

// EarlyEndProbability is the chance that TargetEarlyEnd's emulator ends a
// query page early.
const EarlyEndProbability = 0.3

// The tiers EnvTiers names (package tier keeps them, and the checks).
const (
	// TierAzurite is the tests that compare the emulator with Azurite or
	// test the Azurite harness itself: they need Node.js and the pinned
	// Azurite (`make azurite-install`).
	TierAzurite = tier.Azurite
	// TierJS is the JavaScript SDK interop test: it needs Node.js, the
	// pinned JS SDK (`make jsinterop-install`) and the pinned Azurite.
	TierJS = tier.JS
	// TierPython is the Python SDK interop test: it needs Python 3 and the
	// Azure SDK for Python as Debian packages it, python3-azure (`make
	// pyinterop-install`).
	TierPython = tier.Python
)

// Tier runs the rest of the test only when EnvTiers asks for tier: when it
// is not asked for, the test is skipped, naming the switch; when it is,
// and what the tier needs is missing, the test fails with the command that
// installs it. Call it first:
//
//	testenv.Tier(t, testenv.TierAzurite)
func Tier(t testing.TB, name string) {
	t.Helper()
	tier.Require(t, name)
}

// target is EnvTarget read: kind is TargetEmulator, TargetAzurite or
// targetAccount.
type target struct {
	kind     string
	lenient  bool    // plain Azurite
	earlyEnd float64 // the emulator's early-end probability, 0 for none
	connStr  string  // the account's
}

// readTarget parses EnvTarget.
func readTarget() (target, error) {
	v := strings.TrimSpace(os.Getenv(EnvTarget))
	switch v {
	case "", TargetEmulator:
		return target{kind: TargetEmulator}, nil
	case TargetEarlyEnd:
		return target{kind: TargetEmulator, earlyEnd: EarlyEndProbability}, nil
	case TargetAzurite:
		return target{kind: TargetAzurite}, nil
	case TargetAzuriteLenient:
		return target{kind: TargetAzurite, lenient: true}, nil
	}
	if strings.Contains(v, "=") {
		return target{kind: targetAccount, connStr: v}, nil
	}
	return target{kind: TargetEmulator}, fmt.Errorf("%s=%q: want %s, %s, %s, %s or an account's connection string",
		EnvTarget, v, TargetEmulator, TargetEarlyEnd, TargetAzurite, TargetAzuriteLenient)
}

// Target is what the tests run on: "emulator" (the default, with or
// without early ends), "azurite" (strict or lenient) or "account" (a
// connection string). EnvTarget says which.
func Target() string {
	tg, _ := readTarget()
	return tg.kind
}

// IsAzurite reports whether tests run on Azurite, whose answers depart
// from Azure's in known ways.
func IsAzurite() bool { return Target() == TargetAzurite }

// IsEmulator reports whether tests run on tablekit's emulator, the
// default.
func IsEmulator() bool { return Target() == TargetEmulator }

// Lenient reports whether tests run on plain Azurite
// (TargetAzuriteLenient), which lets through what Azure refuses. On
// TargetAzurite its strict proxy answers those requests as Azure does.
func Lenient() bool {
	tg, _ := readTarget()
	return tg.lenient
}

// EarlyEnd reports whether the tests' emulators end query pages early
// (TargetEarlyEnd).
func EarlyEnd() bool {
	tg, _ := readTarget()
	return tg.earlyEnd > 0
}

// earlyEnd is the early ends of the emulators testenv starts: nil unless
// the target is TargetEarlyEnd.
func earlyEnd() (*emulator.EarlyEnd, error) {
	tg, err := readTarget()
	if err != nil || tg.earlyEnd == 0 {
		return nil, err
	}
	seed, _, err := readSeed()
	if err != nil {
		return nil, err
	}
	if seed == 0 {
		seed = 1
	}
	return &emulator.EarlyEnd{Seed: int64(seed), Probability: tg.earlyEnd}, nil
}

// Seed is the seed of a test's randomness: def, so that CI replays the
// same run, or EnvSeed (a number, or "random" to explore). It logs the
// seed with how to replay it.
func Seed(t testing.TB, def uint64) uint64 {
	t.Helper()
	seed, set, err := readSeed()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if !set {
		seed = def
	}
	t.Logf("seed %d (%s=%d replays it)", seed, EnvSeed, seed)
	return seed
}

// randomSeed is chosen once per test binary, so that every test of a
// "random" run logs a seed that replays it.
var randomSeed = uint64(time.Now().UnixNano())

// readSeed parses EnvSeed: set is false when it is unset.
func readSeed() (seed uint64, set bool, err error) {
	switch v := strings.TrimSpace(os.Getenv(EnvSeed)); v {
	case "":
		return 0, false, nil
	case "random":
		return randomSeed, true, nil
	default:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s=%q: want an unsigned integer or \"random\"", EnvSeed, v)
		}
		return n, true, nil
	}
}
