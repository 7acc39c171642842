package buildinfo_test

import (
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/tablekit/tablekit/internal/buildinfo"
)

func TestFormat(t *testing.T) {
	const rev = "d8f371c702ed7e7cf21446ae8390c9f3f907ec7c"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	main := func(version string, settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: buildinfo.ModulePath, Version: version}, Settings: settings}
	}
	dep := func(d *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{
			Main:     debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps:     []*debug.Module{{Path: "golang.org/x/text", Version: "v0.31.0"}, d},
			Settings: vcs("true"), // the program's revision, not tablekit's
		}
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install at a tag", main("v0.1.0", nil), "v0.1.0"},
		{"checkout at a tag, clean", main("v0.1.0", vcs("false")), "v0.1.0 d8f371c702ed"},
		{"pseudo-version", main("v0.0.0-20261128014126-d8f371c702ed", vcs("false")), "v0.0.0-20261128014126-d8f371c702ed"},
		{"pseudo-version, dirty", main("v0.0.0-20261128014126-d8f371c702ed+dirty", vcs("true")), "v0.0.0-20261128014126-d8f371c702ed+dirty"},
		{"devel with revision", main("(devel)", vcs("false")), "(devel) d8f371c702ed"},
		{"devel with revision, modified", main("(devel)", vcs("true")), "(devel) d8f371c702ed+dirty"},
		{"devel without vcs", main("(devel)", nil), "(devel)"},
		{"no version at all", main("", nil), "(devel)"},
		{"short revision", main("(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}), "(devel) abc"},
		{"library dependency", dep(&debug.Module{Path: buildinfo.ModulePath, Version: "v0.1.0"}), "v0.1.0"},
		{"library replaced by a directory", dep(&debug.Module{Path: buildinfo.ModulePath, Version: "v0.1.0", Replace: &debug.Module{Path: "../tablekit"}}), "(devel)"},
		{"library replaced by a fork", dep(&debug.Module{Path: buildinfo.ModulePath, Version: "v0.1.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v0.1.1"}}), "v0.1.1"},
		{"not linked in", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, "unknown"},
	} {
		if got := buildinfo.Format(tc.bi); got != tc.want {
			t.Errorf("%s: Format = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionInThisBinary checks the test binary's own build information:
// go test builds it with tablekit as the main module.
func TestVersionInThisBinary(t *testing.T) {
	v := buildinfo.Version()
	if !regexp.MustCompile(`^(v\d+\.\d+\.\d+\S*|\(devel\))( [0-9a-f]{1,12})?(\+dirty)?$`).MatchString(v) {
		t.Fatalf("Version() = %q, want a module version or (devel), maybe a revision", v)
	}
}
