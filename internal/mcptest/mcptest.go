// Package mcptest is a real MCP server for the tests of package mcp and of
// what is built on it (the config, runs that call its tools). It runs
// in-process behind the SDK's streamable-HTTP handler, or as a program over
// stdio (the test binary started again with Env set).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env, set to "1" in a test binary's environment, makes it serve over stdio
// (see Main). EnvCollide, set to "1", adds two tools whose hitch names
// collide.
// EnvRefuse names a file: while it exists, the server exits at once.
const (
	Env        = "HITCH_MCP_TESTSERVER"
	EnvCollide = "HITCH_MCP_TESTSERVER_COLLIDE"
	EnvRefuse  = "HITCH_MCP_TESTSERVER_REFUSE"
)

type textIn struct {
	Text string `json:"text"`
}

type hugeIn struct {
	Bytes int `json:"bytes"`
}

type slowIn struct {
	// Addr is a TCP address the tool dials and writes its process id to
	// once it has started, so a test knows the call is running. The tool
	// returns when the test closes that connection or the call is cancelled.
	Addr string `json:"addr"`
}

type nameIn struct {
	Name string `json:"name"`
}

type none struct{}

type count struct {
	N     int    `json:"n"`
	Label string `json:"label"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// New returns the server with its tools: echo, fail, huge, slow, env, pid,
// add_tool, structured, image and files.read.
func New(collide bool) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1"}, nil)
	yes := true
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *sdk.CallToolRequest, in none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it broke"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "huge", Description: "Return that many bytes.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in hugeIn) (*sdk.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Block until cancelled.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in slowIn) (*sdk.CallToolResult, any, error) {
			conn, err := net.Dial("tcp", in.Addr)
			if err != nil {
				return nil, nil, err
			}
			defer conn.Close()
			fmt.Fprintf(conn, "%d\n", os.Getpid())
			closed := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, conn)
				close(closed)
			}()
			select {
			case <-ctx.Done():
			case <-closed:
			}
			return text("cancelled"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "List the environment's variable names."},
		func(_ context.Context, _ *sdk.CallToolRequest, in none) (*sdk.CallToolResult, any, error) {
			var names []string
			for _, kv := range os.Environ() {
				names = append(names, strings.SplitN(kv, "=", 2)[0])
			}
			sort.Strings(names)
			return text(strings.Join(names, ",")), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "Return the process id."},
		func(_ context.Context, _ *sdk.CallToolRequest, in none) (*sdk.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add_tool", Description: "Add an echo tool of that name."},
		func(_ context.Context, _ *sdk.CallToolRequest, in nameIn) (*sdk.CallToolResult, any, error) {
			sdk.AddTool(s, &sdk.Tool{Name: in.Name, Description: "Added later."},
				func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
					return text(in.Text), nil, nil
				})
			return text("added " + in.Name), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "structured", Description: "Return structured content."},
		func(_ context.Context, _ *sdk.CallToolRequest, in none) (*sdk.CallToolResult, count, error) {
			return nil, count{N: 3, Label: "three"}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Return a caption and an image."},
		func(_ context.Context, _ *sdk.CallToolRequest, in none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a dot:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			}}, nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "files.read", Description: "A dotted name; a schema without properties.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
	if collide {
		for _, name := range []string{"a.b", "a_b"} {
			sdk.AddTool(s, &sdk.Tool{Name: name}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
				return text(""), nil, nil
			})
		}
	}
	return s
}

// Main serves over stdio when Env is set, and then exits; a TestMain calls
// it first.
func Main() {
	if os.Getenv(Env) != "1" {
		return
	}
	if f := os.Getenv(EnvRefuse); f != "" {
		if _, err := os.Stat(f); err == nil {
			os.Exit(3)
		}
	}
	err := New(os.Getenv(EnvCollide) == "1").Run(context.Background(), &sdk.StdioTransport{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
	}
	os.Exit(0)
}
