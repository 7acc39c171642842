//go:build ignore

// Command platforms prints the platforms (os/architecture, a line each,
// sorted) of the manifest list or OCI index on stdin, for build/images.sh.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

func main() {
	var list struct {
		Manifests []struct {
			Platform struct {
				OS           string `json:"os"`
				Architecture string `json:"architecture"`
			} `json:"platform"`
		} `json:"manifests"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&list); err != nil {
		fmt.Fprintln(os.Stderr, "platforms:", err)
		os.Exit(1)
	}
	var out []string
	for _, m := range list.Manifests {
		if m.Platform.Architecture == "unknown" {
			continue // an attestation (buildx), not an image
		}
		out = append(out, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	slices.Sort(out)
	for _, p := range out {
		fmt.Println(p)
	}
}
