package mcp

import (
	"context"

	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/tool"
)

var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 80)
	cases := []struct{ server, tool, want string }{
		{"fs", "read_file", "fs__read_file"},
		{"fs", "files.read", "fs__files_read"},
		{"git-hub", "list repos/ü", "git-hub__list_repos__"},
		{"s", long, "s__" + strings.Repeat("a", 52) + "_"},
	}
	for _, c := range cases {
		got := ToolName(c.server, c.tool)
		if !providerName.MatchString(got) {
			t.Errorf("ToolName(%q, %q) = %q: not a name providers accept", c.server, c.tool, got)
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("ToolName(%q, %q) = %q, want %q…", c.server, c.tool, got, c.want)
		}
		if again := ToolName(c.server, c.tool); again != got {
			t.Errorf("not deterministic: %q then %q", got, again)
		}
	}
	if a, b := ToolName("s", long+"x"), ToolName("s", long+"y"); a == b || len(a) != 64 {
		t.Errorf("long names: %q and %q", a, b)
	}
}

func TestObjectSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want string
	}{
		{nil, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []any{"a"}},
			`{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`},
		{map[string]any{"type": "array"}, `{"properties":{},"type":"object"}`},
		{"not a schema", `{"properties":{},"type":"object"}`},
	}
	for _, c := range cases {
		got, err := objectSchema(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("objectSchema(%v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	if got := bound("short", DefaultMaxResult); got != "short" {
		t.Errorf("short: %q", got)
	}
	big := strings.Repeat("é", DefaultMaxResult) // 2 MiB
	got := bound(big, DefaultMaxResult)
	if len(got) > DefaultMaxResult || len(got) < DefaultMaxResult-64 || !utf8.ValidString(got) {
		t.Errorf("bounded to %d bytes (valid UTF-8: %v)", len(got), utf8.ValidString(got))
	}
	if !strings.HasSuffix(got, "of 2097152 bytes shown]") {
		t.Errorf("note: %q", got[len(got)-50:])
	}
	if got := bound(big, 10); len(got) > 10 {
		t.Errorf("a tiny bound gave %d bytes", len(got))
	}
}

func TestResultText(t *testing.T) {
	t.Parallel()
	size := int64(10)
	res := &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "one"},
			&sdk.TextContent{Text: `{"n": 1}`},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("abc")},
			&sdk.ResourceLink{URI: "file:///a", MIMEType: "text/plain", Size: &size},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", Text: "bee"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c", MIMEType: "image/png", Blob: []byte("xy")}},
		},
		StructuredContent: map[string]any{"n": 1}, // also sent as text: not repeated
	}
	want := "one\n{\"n\": 1}\n[audio: audio/wav, 3 bytes]\n[resource link: file:///a text/plain]\n" +
		"[resource: file:///b]\nbee\n[resource: file:///c, image/png, 2 bytes]"
	if got := resultText(res, DefaultMaxResult); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestHintsAndOverrides(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	c := &Client{srv: Server{Name: "s", Tools: map[string]ToolOverride{
		"ro":    {Replayable: &no},
		"plain": {Replayable: &yes, Timeout: time.Second},
	}}.WithDefaults()}
	list := []*sdk.Tool{
		{Name: "ro", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "plain"},
		{Name: "idem", Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no}},
	}
	tools, err := newTools(c, list)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		replay  int
		timeout time.Duration
		hints   Hints
	}{
		{0, DefaultCallTimeout, Hints{Server: "s", Tool: "ro", ReadOnly: true, OpenWorld: true}},
		{DefaultReplay, time.Second, Hints{Server: "s", Tool: "plain", Destructive: true, OpenWorld: true}},
		{DefaultReplay, DefaultCallTimeout, Hints{Server: "s", Tool: "idem", Idempotent: true}},
	}
	for i, tl := range tools {
		info := tl.Info()
		h, _ := HintsOf(tl)
		if info.Replay != want[i].replay || info.Timeout != want[i].timeout || h != want[i].hints {
			t.Errorf("%s: replay %d timeout %s hints %+v; want %+v", info.Name, info.Replay, info.Timeout, h, want[i])
		}
	}
	if _, ok := HintsOf(tool.MustNew("x", "", func(_ context.Context, _ struct{}) (string, error) { return "", nil })); ok {
		t.Error("a plain tool has hints")
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s    Server
		want string // in the error; "" for none
	}{
		{Server{Name: "fs", Command: "server"}, ""},
		{Server{Name: "web", URL: "https://example.test/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}, ""},
		{Server{Command: "x"}, "name: is empty"},
		{Server{Name: "a__b", Command: "x"}, `may not contain "__"`},
		{Server{Name: "a.b", Command: "x"}, "may hold only"},
		{Server{Name: strings.Repeat("a", 33), Command: "x"}, "at most 32"},
		{Server{Name: "x"}, "give either command"},
		{Server{Name: "x", Command: "a", URL: "http://b"}, "not both"},
		{Server{Name: "x", URL: "ftp://b"}, "url: must be an absolute http"},
		{Server{Name: "x", URL: "http://b", Env: map[string]string{"A": "1"}}, "apply to a command"},
		{Server{Name: "x", Command: "a", Headers: map[string]string{"A": "1"}}, "headers: apply to a url"},
		{Server{Name: "x", URL: "http://b", Headers: map[string]string{"A": "1\r\nB: 2"}}, `header "A" is not valid`},
		{Server{Name: "x", Command: "a", Env: map[string]string{"A=B": "1"}}, `variable name "A=B"`},
		{Server{Name: "x", Command: "a", ConnectTimeout: time.Hour}, "connect_timeout: is 1h0m0s"},
		{Server{Name: "x", Command: "a", CallTimeout: tool.Infinite}, ""},
		{Server{Name: "x", Command: "a", CallTimeout: -2}, "call_timeout"},
		{Server{Name: "x", Command: "a", MaxResult: 65<<20 + 1}, "max_result"},
		{Server{Name: "x", Command: "a", Tools: map[string]ToolOverride{"t": {Timeout: -5}}}, "tools.t.timeout"},
	}
	for _, c := range cases {
		err := c.s.WithDefaults().Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.s, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: got %v, want %q", c.s, err, c.want)
		}
	}
	// Header values never show in errors.
	err := Server{Name: "x", URL: "http://b", Headers: map[string]string{"Bad Key": "s3cret"}}.WithDefaults().Validate()
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("got %v", err)
	}
}
