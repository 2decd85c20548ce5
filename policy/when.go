package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
)

// DefaultCostLimit bounds the work one evaluation of a rule's condition may
// do, in CEL cost units (about one per operation, more for string and list
// work that grows with its input). A condition over its limit denies the
// call.
const DefaultCostLimit = 1_000_000

// The variables a condition sees, as CEL types. Field names follow the
// config file's snake case.
type (
	agentInfo struct {
		Name    string `cel:"name"`
		Version int64  `cel:"version"`
	}
	runInfo struct {
		ID       string            `cel:"id"`
		RootID   string            `cel:"root_id"`
		Depth    int64             `cel:"depth"`
		Metadata map[string]string `cel:"metadata"`
	}
	sessionInfo struct {
		ID       string            `cel:"id"`
		Metadata map[string]string `cel:"metadata"`
	}
	hintsInfo struct {
		Stated      bool `cel:"stated"`
		ReadOnly    bool `cel:"read_only"`
		Destructive bool `cel:"destructive"`
		Idempotent  bool `cel:"idempotent"`
		OpenWorld   bool `cel:"open_world"`
	}
)

var conditionEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[agentInfo](), reflect.TypeFor[runInfo](), reflect.TypeFor[sessionInfo](), reflect.TypeFor[hintsInfo](), ext.ParseStructTags(true)),
		ext.Strings(),
		cel.Variable("tool", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("agent", cel.ObjectType("policy.agentInfo")),
		cel.Variable("run", cel.ObjectType("policy.runInfo")),
		cel.Variable("session", cel.ObjectType("policy.sessionInfo")),
		cel.Variable("requirement", cel.StringType),
		cel.Variable("hints", cel.ObjectType("policy.hintsInfo")),
	)
})

// Condition is a compiled rule condition: a CEL expression that yields a
// bool. It is safe for concurrent use.
type Condition struct {
	src string
	prg cel.Program
}

// compileMu serialises compiles on the shared environment.
var compileMu sync.Mutex

// CompileCondition parses and type-checks a rule's condition. The error
// names each problem's position in the expression.
func CompileCondition(src string) (*Condition, error) {
	env, err := conditionEnv()
	if err != nil {
		return nil, fmt.Errorf("set up conditions: %w", err)
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("is empty: write a CEL expression such as args.path.startsWith(\"src/\"), or leave when out")
	}
	// cel-go's type checker fills a lazily built table of its shared
	// environment without a lock (a race two concurrent compiles hit), so
	// compiles take turns; they happen when a config loads, not per call.
	compileMu.Lock()
	ast, iss := env.Compile(src)
	compileMu.Unlock()
	if iss.Err() != nil {
		multiline := strings.Contains(strings.TrimSpace(src), "\n")
		var parts []string
		for _, e := range iss.Errors() {
			at := fmt.Sprintf("column %d", e.Location.Column()+1)
			if multiline {
				at = fmt.Sprintf("line %d, column %d", e.Location.Line(), e.Location.Column()+1)
			}
			parts = append(parts, at+": "+e.Message)
		}
		return nil, fmt.Errorf("%s", strings.Join(parts, "; "))
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("gives %s, not bool: compare it, as in args.force == true", ast.OutputType())
	}
	prg, err := env.Program(ast,
		cel.CostLimit(DefaultCostLimit),
		cel.InterruptCheckFrequency(64),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, err
	}
	return &Condition{src: src, prg: prg}, nil
}

// String returns the condition's source.
func (c *Condition) String() string { return c.src }

// Eval reports whether the condition holds for a, within its cost limit
// and ctx.
func (c *Condition) Eval(ctx context.Context, a Action) (bool, error) {
	return c.eval(ctx, newInput(a))
}

func (c *Condition) eval(ctx context.Context, in *input) (bool, error) {
	v, _, err := c.prg.ContextEval(ctx, in.vars)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("gave %v, not a bool", v.Type())
	}
	return b, nil
}

// input holds the variables of one decision; args are parsed when a
// condition first reads them. Not safe for concurrent use.
type input struct {
	vars map[string]any
}

func newInput(a Action) *input {
	orEmpty := func(m map[string]string) map[string]string {
		if m == nil {
			return map[string]string{}
		}
		return m
	}
	args := func() any {
		if len(bytes.TrimSpace(a.Arguments)) == 0 {
			return map[string]any{}
		}
		var v any
		if err := json.Unmarshal(a.Arguments, &v); err != nil {
			return types.NewErr("the arguments are not JSON: %v", err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return types.NewErr("the arguments are not a JSON object")
		}
		return m
	}
	var hints hintsInfo
	if h := a.Hints; h != nil {
		hints = hintsInfo{Stated: true, ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}
	}
	return &input{vars: map[string]any{
		"tool":        a.Tool,
		"args":        args,
		"agent":       agentInfo{Name: a.Agent, Version: int64(a.AgentVersion)},
		"run":         runInfo{ID: a.RunID, RootID: a.RootID, Depth: int64(a.Depth), Metadata: orEmpty(a.RunMetadata)},
		"session":     sessionInfo{ID: a.SessionID, Metadata: orEmpty(a.SessionMetadata)},
		"requirement": a.Requirement,
		"hints":       hints,
	}}
}
