package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the release build (make build, make release, the Dockerfile)
// with -ldflags "-X main.version=... -X main.commit=... -X
// main.buildTime=...": a build from a tag or an archive says what it is
// even where the build has no version control information.
var (
	version   string
	commit    string
	buildTime string
)

// buildInfo is what `hitch version` reports.
type buildInfo struct {
	// Version is the release, or the module's version as the go command
	// stamped it (a pseudo-version from version control), else "dev".
	Version string `json:"version"`
	// Commit is the revision built, "" when not known; Modified says the
	// work tree had changes that are not committed.
	Commit   string `json:"commit"`
	Modified bool   `json:"modified,omitempty"`
	// BuildTime is when the release was built or, for a plain go build,
	// the time of the commit; "" when neither is known.
	BuildTime string `json:"build_time"`
	// Go is the toolchain's version; Platform is GOOS/GOARCH.
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo reads the binary's build information: what the release
// build set, else what debug.ReadBuildInfo has.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, BuildTime: buildTime, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		b.Version = cmp.Or(b.Version, "dev")
		return b
	}
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	b.Version = cmp.Or(b.Version, "dev")
	b.Go = cmp.Or(bi.GoVersion, b.Go)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = cmp.Or(b.Commit, s.Value)
		case "vcs.time":
			b.BuildTime = cmp.Or(b.BuildTime, s.Value)
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// versionString is the version the server and the MCP tools report.
func versionString() string { return readBuildInfo().Version }

func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build time and Go version of this binary",
		Args:  args(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			b := readBuildInfo()
			if g.json {
				out, err := json.Marshal(b)
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "%s\n", out)
				return nil
			}
			commit := cmp.Or(b.Commit, "unknown")
			if b.Modified {
				commit += " (modified)"
			}
			fmt.Fprintf(g.stdout, "hitch %s\ncommit   %s\nbuilt    %s\ngo       %s %s\n", b.Version, commit, cmp.Or(b.BuildTime, "unknown"), b.Go, b.Platform)
			return nil
		},
	}
}
