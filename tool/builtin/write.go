package builtin

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

type writeIn struct {
	Path     string `json:"path" jsonschema:"file to write, relative to the workspace root or absolute inside a granted root"`
	Content  string `json:"content" jsonschema:"the file's new content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"how content is encoded: text (default) or base64 for arbitrary bytes"`
}

const writeDescription = `Write a file, replacing it whole if it exists and creating it and any missing parent directories if not. content is the complete new content as text; set encoding to "base64" to write arbitrary bytes. To change part of an existing file, prefer edit.`

type editIn struct {
	Path       string `json:"path" jsonschema:"file to edit"`
	OldText    string `json:"oldText" jsonschema:"exact text to replace, including whitespace and indentation"`
	NewText    string `json:"newText" jsonschema:"text to put in its place"`
	ReplaceAll bool   `json:"replaceAll,omitempty" jsonschema:"replace every occurrence instead of requiring exactly one"`
}

const editDescription = `Replace exact text in an existing file. oldText must match the file byte for byte, whitespace and indentation included. Without replaceAll, oldText must occur exactly once: if it is not found the edit fails, and if it occurs more than once the edit fails and asks for more surrounding lines to make it unique. With replaceAll, every occurrence is replaced. Read the file first so oldText is copied exactly.`

// writeSchema is the write tool's input schema.
var writeSchema = schemaFor[writeIn](func(p map[string]*jsonschema.Schema) {
	p["encoding"].Enum = []any{"text", "base64"}
})

// editSchema is the edit tool's input schema.
var editSchema = schemaFor[editIn](nil)

func (ts *toolset) write(ctx context.Context, in writeIn) (string, error) {
	if in.Path == "" {
		return "", argError("write", "path is empty")
	}
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "text":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil {
			return "", argError("write", "content is not valid base64: %v", err)
		}
		data = b
	default:
		return "", argError("write", "encoding %q is not text or base64", in.Encoding)
	}
	release, err := ts.locks.lock(ctx, func() (string, error) { return ts.sb.Resolve(in.Path) })
	if err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	defer release()
	if err := ts.sb.WriteFile(ctx, in.Path, data); err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	return fmt.Sprintf("Wrote %d bytes to %s.", len(data), in.Path), nil
}

func (ts *toolset) edit(ctx context.Context, in editIn) (string, error) {
	if in.Path == "" {
		return "", argError("edit", "path is empty")
	}
	if in.OldText == "" {
		return "", argError("edit", "oldText is empty; to write a whole file use write")
	}
	release, err := ts.locks.lock(ctx, func() (string, error) { return ts.sb.Resolve(in.Path) })
	if err != nil {
		return "", fmt.Errorf("edit: %w", err)
	}
	defer release()
	old, err := ts.sb.ReadFile(ctx, in.Path)
	if err != nil {
		return "", fmt.Errorf("edit: %w", err)
	}
	updated, n, err := applyEdit(string(old), in.OldText, in.NewText, in.ReplaceAll)
	if err != nil {
		return "", fmt.Errorf("edit %s: %w", in.Path, err)
	}
	if err := ts.sb.WriteFile(ctx, in.Path, []byte(updated)); err != nil {
		return "", fmt.Errorf("edit: %w", err)
	}
	line := 1 + strings.Count(string(old[:strings.Index(string(old), in.OldText)]), "\n")
	if n == 1 {
		return fmt.Sprintf("Replaced 1 occurrence in %s at line %d.", in.Path, line), nil
	}
	return fmt.Sprintf("Replaced %d occurrences in %s (the first at line %d).", n, in.Path, line), nil
}

// applyEdit replaces oldText in content. Without all, oldText must occur
// exactly once, overlapping occurrences counted, since either could be the
// one meant. It returns the new content and the number of replacements.
func applyEdit(content, oldText, newText string, all bool) (string, int, error) {
	if oldText == "" {
		return "", 0, fmt.Errorf("oldText is empty")
	}
	if all {
		n := strings.Count(content, oldText)
		if n == 0 {
			return "", 0, notFound(content, oldText)
		}
		return strings.ReplaceAll(content, oldText, newText), n, nil
	}
	first := strings.Index(content, oldText)
	if first < 0 {
		return "", 0, notFound(content, oldText)
	}
	if n := countOverlapping(content, oldText); n > 1 {
		return "", 0, fmt.Errorf("oldText occurs %d times; include more surrounding lines in oldText so it matches exactly one place, or set replaceAll to replace them all", n)
	}
	return content[:first] + newText + content[first+len(oldText):], 1, nil
}

func countOverlapping(s, sub string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return n
		}
		n++
		i += j + 1
	}
}

// notFound explains a failed exact match, with a hint when only line
// endings or surrounding whitespace differ.
func notFound(content, oldText string) error {
	msg := "oldText was not found; it must match the file exactly, including whitespace, indentation and line endings. Read the file again and copy the text exactly"
	switch {
	case strings.Contains(content, "\r\n") && !strings.Contains(oldText, "\r\n") &&
		strings.Contains(content, strings.ReplaceAll(oldText, "\n", "\r\n")):
		msg += " (the file uses CRLF line endings; oldText uses LF)"
	case strings.TrimSpace(oldText) != oldText && strings.TrimSpace(oldText) != "" &&
		strings.Contains(content, strings.TrimSpace(oldText)):
		msg += " (it matches once leading and trailing whitespace is removed)"
	case bytes.IndexByte([]byte(content), 0) >= 0:
		msg += " (the file looks binary)"
	}
	return fmt.Errorf("%s", msg)
}
