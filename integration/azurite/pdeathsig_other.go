//go:build !linux

package azurite

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
