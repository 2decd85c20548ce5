package builtin

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/jsonschema-go/jsonschema"
)

type globIn struct {
	Pattern    string `json:"pattern" jsonschema:"file name pattern such as *.go (matched against names, like find -name); a pattern with a slash is matched against the path below cwd, and ** spans directories"`
	Cwd        string `json:"cwd,omitempty" jsonschema:"directory to search under (default: the workspace root)"`
	MaxMatches int    `json:"maxMatches,omitempty" jsonschema:"most paths to return (default and most: 1000)"`
}

const globDescription = `Find files and directories under cwd whose name matches pattern, the way find -name does: *.go matches every Go file at any depth. A pattern holding a slash is matched against the whole path below cwd instead, with ** spanning directories (src/**/*_test.go). Results are sorted, directories end in a slash, and at most 1000 paths are returned; the output says when more matched. Symbolic links are listed but not followed.`

// globMaxVisits bounds the entries one glob walks.
const globMaxVisits = 500_000

// globSchema is the glob tool's input schema.
var globSchema = schemaFor[globIn](func(p map[string]*jsonschema.Schema) {
	p["maxMatches"].Minimum = minimum(1)
})

func (ts *toolset) glob(ctx context.Context, in globIn) (string, error) {
	if in.Pattern == "" {
		return "", argError("glob", "pattern is empty")
	}
	if !doublestar.ValidatePattern(in.Pattern) {
		return "", argError("glob", "pattern %q is not a valid glob", in.Pattern)
	}
	if in.MaxMatches < 0 {
		return "", argError("glob", "maxMatches must be 1 or more")
	}
	limit := GlobMaxPaths
	if in.MaxMatches > 0 {
		limit = min(in.MaxMatches, GlobMaxPaths)
	}
	cwd := in.Cwd
	if cwd == "" {
		cwd = "."
	}
	base, err := ts.sb.Resolve(cwd)
	if err != nil {
		return "", fmt.Errorf("glob: %w", err)
	}
	shown := ts.display(base)
	byPath := strings.Contains(in.Pattern, "/")
	pattern := strings.TrimPrefix(in.Pattern, "./")

	var found []string
	more, visits := false, 0
	err = ts.sb.Walk(ctx, cwd, func(rel string, d fs.DirEntry) error {
		if rel == "." {
			return nil
		}
		if visits++; visits > globMaxVisits {
			return fs.SkipAll
		}
		subject := path.Base(rel)
		if byPath {
			subject = rel
		}
		if ok, _ := doublestar.Match(pattern, subject); !ok {
			return nil
		}
		if len(found) == limit {
			more = true
			return fs.SkipAll
		}
		p := path.Join(shown, rel)
		if d.IsDir() {
			p += "/"
		}
		found = append(found, p)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("glob: %w", err)
	}
	slices.Sort(found)
	var b strings.Builder
	if len(found) == 0 {
		b.WriteString("No paths matched.")
	}
	b.WriteString(strings.Join(found, "\n"))
	switch {
	case more && limit < GlobMaxPaths:
		fmt.Fprintf(&b, "\n[Stopped at maxMatches=%d; more paths match. Raise maxMatches (up to %d) or narrow the pattern or cwd.]", limit, GlobMaxPaths)
	case more:
		fmt.Fprintf(&b, "\n[Showing the first %d paths; more match. Narrow the pattern or cwd to see the others.]", limit)
	case visits > globMaxVisits:
		fmt.Fprintf(&b, "\n[The search stopped after looking at %d entries; narrow cwd to search the rest.]", globMaxVisits)
	}
	return b.String(), nil
}
