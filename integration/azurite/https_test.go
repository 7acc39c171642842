package azurite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/integration/azurite"
)

// Options that Azurite cannot serve together are refused before any
// process starts: --oauth without --cert, half a certificate, and the
// table proxy (plain HTTP) over HTTPS.
func TestStartRefusesHTTPSMismatches(t *testing.T) {
	for _, c := range []struct {
		o    azurite.Options
		want string
	}{
		{azurite.Options{OAuth: "basic"}, "needs HTTPS"},
		{azurite.Options{CertFile: "cert.pem"}, "both"},
		{azurite.Options{CertFile: "cert.pem", KeyFile: "key.pem", Strict: true}, "not available over HTTPS"},
	} {
		// Command names no executable: a refusal comes before it is run.
		c.o.Command = "/nonexistent/azurite"
		inst, err := azurite.Start(context.Background(), &c.o)
		if err == nil {
			inst.Stop()
			t.Errorf("Start(%+v) succeeded", c.o)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%+v): %v, want an error saying %q", c.o, err, c.want)
		}
	}
}
