package emulator_test

import (
	"testing"

	"github.com/tablekit/tablekit/tools/testenv"
)

// The Python SDK over HTTPS: _pyinterop/https.py trusts the emulator's CA
// through REQUESTS_CA_BUNDLE, as a Python user would, and uses Shared Key
// and a bearer token on the three services; an expired token is refused
// 401 InvalidAuthenticationInfo.
func TestPythonInteropHTTPS(t *testing.T) {
	t.Parallel()
	testenv.PyScript{Path: "_pyinterop/https.py", Steps: []string{"https.sharedKey", "https.bearer", "https.expired"},
		HTTPS: true, OAuth: true}.Run(t)
}
