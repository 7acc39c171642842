package azurite_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/tier"
)

func TestStartServesAllThreeServicesAndStops(t *testing.T) {
	tier.Require(t, tier.Azurite)
	inst := azurite.StartTB(t, nil)
	for _, u := range []string{inst.BlobURL, inst.QueueURL, inst.TableURL} {
		pu, err := url.Parse(u)
		if err != nil || pu.Hostname() != "127.0.0.1" || !strings.HasSuffix(pu.Path, "/"+azurite.AccountName) {
			t.Fatalf("endpoint %q is not a loopback Azurite endpoint", u)
		}
		c, err := net.DialTimeout("tcp", pu.Host, time.Second)
		if err != nil {
			t.Fatalf("%s does not accept connections: %v", u, err)
		}
		c.Close()
	}
	svc, err := aztables.NewServiceClientFromConnectionString(inst.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(context.Background(), "harnesscheck", nil); err != nil {
		t.Fatalf("create a table through the returned connection string: %v", err)
	}
	inst.Stop()
	pu, _ := url.Parse(inst.TableURL)
	if c, err := net.DialTimeout("tcp", pu.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("table port %s still accepts connections after Stop", pu.Host)
	}
	inst.Stop() // idempotent
}

func TestTwoInstancesAreIsolated(t *testing.T) {
	tier.Require(t, tier.Azurite)
	a := azurite.StartTB(t, nil)
	b := azurite.StartTB(t, nil)
	if a.TableURL == b.TableURL {
		t.Fatal("two instances share a table endpoint")
	}
	ctx := context.Background()
	sa, _ := aztables.NewServiceClientFromConnectionString(a.ConnectionString, nil)
	sb, _ := aztables.NewServiceClientFromConnectionString(b.ConnectionString, nil)
	if _, err := sa.CreateTable(ctx, "onlyina", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.CreateTable(ctx, "onlyina", nil); err != nil {
		t.Errorf("the table created in instance a is visible in b: %v", err)
	}
}

func TestMissingAzuriteNamesTheInstallCommand(t *testing.T) {
	t.Setenv("TABLEKIT_AZURITE", "/nonexistent/azurite")
	_, err := azurite.Start(context.Background(), nil)
	if !errors.Is(err, azurite.ErrNotInstalled) {
		t.Fatalf("Start with a missing command = %v, want ErrNotInstalled", err)
	}
	if hint := azurite.InstallHint(); !strings.Contains(hint, "npm") || !strings.Contains(hint, azurite.Version) && !strings.Contains(hint, "npm ci --prefix") {
		t.Errorf("InstallHint %q does not give an npm command", hint)
	}
}

// In the repository, the pinned install is found beside this package,
// whether the test binary was built with -trimpath (as make test builds
// it: source file names are then import paths) or without.
func TestInstallHintNamesThePinnedProject(t *testing.T) {
	dir, err := filepath.Abs("_npm")
	if err != nil {
		t.Fatal(err)
	}
	if hint := azurite.InstallHint(); !strings.Contains(hint, "npm ci --prefix "+dir+"`") {
		t.Errorf("InstallHint = %q, want npm ci --prefix %s", hint, dir)
	}
}
