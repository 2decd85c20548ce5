package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/server"
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

// checkMessage refuses a session message the runtime would refuse: a
// blank one, or one over the runtime's bound. A refused send creates
// nothing, not even its session.
func checkMessage(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return usageError{fmt.Errorf("TEXT is empty: say what the agent should do")}
	case len(text) > hitchtype.DefaultMaxMessageBytes:
		return usageError{fmt.Errorf("TEXT is %d bytes: want at most %d", len(text), hitchtype.DefaultMaxMessageBytes)}
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

// checkAddr refuses a listen address that is not host:port.
func checkAddr(addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return usageError{fmt.Errorf("--addr %s: want host:port, such as %s", printable(addr), server.DefaultAddr)}
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
