package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/spf13/cobra"
)

// minLeaseTTL is the shortest lease the runtime accepts.
const minLeaseTTL = 10 * time.Millisecond

// maxListLimit is the most rows one list command prints.
const maxListLimit = 1000

// checkID refuses a run id the runtime would not accept (hitch.CheckRunID),
// as a usage error. The value is never echoed raw.
func checkID(flag, id string) error {
	if err := hitch.CheckRunID(id); err != nil {
		return usageError{fmt.Errorf("%s: %w", flag, err)}
	}
	return nil
}

// checkTenant refuses a tenant name hitchtype.CheckTenant refuses.
func checkTenant(flag, t string) error {
	if err := hitchtype.CheckTenant(t); err != nil {
		return usageError{fmt.Errorf("%s: %w", flag, err)}
	}
	return nil
}

// checkPrompt refuses an empty or blank prompt.
func checkPrompt(p string) error {
	if strings.TrimSpace(p) == "" {
		return usageError{fmt.Errorf("PROMPT is empty: say what the agent should do")}
	}
	return nil
}

// checkDir refuses a grant of anything but an existing absolute directory.
func checkDir(path string) error {
	if !filepath.IsAbs(path) {
		return usageError{fmt.Errorf("PATH %s: want an absolute path to a directory", printable(path))}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil && os.IsNotExist(err):
		return usageError{fmt.Errorf("PATH %s is missing: want an existing directory", printable(path))}
	case err != nil:
		return usageError{fmt.Errorf("PATH %s: %v", printable(path), err)}
	case !fi.IsDir():
		return usageError{fmt.Errorf("PATH %s is not a directory", printable(path))}
	}
	return nil
}

// checkLimit refuses a list limit outside 1–maxListLimit.
func checkLimit(n int) error {
	if n < 1 || n > maxListLimit {
		return usageError{fmt.Errorf("--limit %d: want 1–%d", n, maxListLimit)}
	}
	return nil
}

// checkGlobals refuses global flags the runtime would refuse or ignore.
func checkGlobals(g *globals) error {
	if g.leaseTTL < minLeaseTTL {
		return usageError{fmt.Errorf("--lease-ttl %s: want at least %s (default 30s)", g.leaseTTL, minLeaseTTL)}
	}
	return checkLogFlags(g)
}

// groupsRefuseUnknown makes every command that only holds subcommands
// refuse an unknown subcommand as a usage error, and print its help when
// called bare.
func groupsRefuseUnknown(c *cobra.Command) {
	for _, sub := range c.Commands() {
		groupsRefuseUnknown(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = func(cmd *cobra.Command, a []string) error {
		if len(a) > 0 {
			return usageError{fmt.Errorf("unknown command %q for %q (see %s --help)", printable(a[0]), cmd.CommandPath(), cmd.CommandPath())}
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}
