package emulator_test

import (
	"testing"

	"github.com/tablekit/tablekit/tools/testenv"
)

// The Python SDK through user delegation SAS: _pyinterop/delegation.py
// gets a user delegation key with a bearer token, signs a blob SAS with
// it (generate_blob_sas(user_delegation_key=...)), reads through it, and
// is refused a write, a delete and another blob, and a read once the key
// has expired; on the emulator and on Azurite 3.37, both over HTTPS with
// --oauth basic and one certificate the script trusts through
// REQUESTS_CA_BUNDLE. On the emulator the key expires as the test moves
// the emulator's clock (Instance.Advance) when the script asks
// (testenv.PyScript.Clock); on Azurite it takes a key two seconds long
// and waits.
func TestPythonDelegation(t *testing.T) {
	t.Parallel()
	testenv.PyScript{Path: "_pyinterop/delegation.py",
		Steps:     []string{"delegation.key", "delegation.read", "delegation.refused", "delegation.expired"},
		OnAzurite: true, HTTPS: true, OAuth: true, Clock: true}.Run(t)
}
