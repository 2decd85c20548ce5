package telemetry_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool"
)

const canary = "sk-canary-0123456789abcdef"

// node is one process: a runtime on the shared file, observed by its own
// Telemetry, as a real deployment would have.
type node struct {
	rt  *hitch.Runtime
	tel *telemetry.Telemetry
}

func newNode(t *testing.T, path string, exp sdktrace.SpanExporter, reader sdkmetric.Reader, agents ...*hitch.Agent) *node {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	red, err := secret.New(map[string]string{"KEY": canary})
	if err != nil {
		t.Fatal(err)
	}
	opts := telemetry.Options{Store: st, Exporter: exp, Redactor: red, Content: true,
		Models: map[string]string{"boss": "scripted/boss", "researcher": "scripted/kid"}}
	if reader != nil {
		opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	}
	tel, err := telemetry.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: agents, OnEvent: func(ev hitch.Event) {
		tel.Observe(ctx, ev.RunID, ev.Entries)
	}})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{rt: rt, tel: tel}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = tel.Shutdown(cctx)
		_ = st.Close()
	})
	return n
}

// TestOneTraceAcrossRetriesApprovalsChildrenAndARestart runs a family with
// a model retry, a policy denial, a sub-agent and an approval answered by a
// second process, and checks that the spans make one tree.
func TestOneTraceAcrossRetriesApprovalsChildrenAndARestart(t *testing.T) {
	ctx := context.Background()
	var charges atomic.Int64
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) {
		charges.Add(1)
		return "charged with " + canary, nil
	})
	kid, err := hitch.Build(hitch.Spec{Name: "researcher", Description: "Finds facts.", Policy: policy.AllowAll(),
		Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "the answer is 42"}}})})
	if err != nil {
		t.Fatal(err)
	}
	approvers, err := approval.NewStatic(approval.Member{Name: "ann", Secret: "ann-secret", Requirements: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	boss, err := hitch.Build(hitch.Spec{Name: "boss", Approvers: approvers, SubAgents: []*hitch.Agent{kid},
		Tools: []tool.Tool{charge},
		Policy: policy.Rules{
			{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "pay"},
			{Tools: []string{"wipe"}, Verdict: policy.Deny, Reason: "never"},
			{Tools: []string{"*"}, Verdict: policy.Allow},
		},
		Limits: hitch.Limits{RetryDelay: time.Millisecond},
		Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{{Name: "researcher", Args: `{"prompt":"find it"}`}, {Name: "wipe"}}, // not a tool of the agent: rejected before the policy,
				Fail: []scripted.Failure{{Kind: model.KindOverloaded, Message: "busy " + canary}}},
			{Calls: []scripted.Call{{Name: "charge"}}},
			{Text: "done"},
		}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hitch.db")
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()

	first := newNode(t, path, exp, reader, boss)
	res, err := first.rt.Start(ctx, boss, "go", hitch.WithID("fam"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := first.rt.Await(ctx, res.Run.ID)
	if err != nil || run.Status != hitchtype.StatusWaiting {
		t.Fatalf("first process: %+v %v", run, err)
	}
	if err := first.tel.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}

	// A second process answers the approval and finishes the run.
	second := newNode(t, path, exp, nil, boss)
	p, err := approvers.Check(ctx, approval.Credential{Name: "ann", Secret: "ann-secret"}, "pay")
	if err != nil {
		t.Fatal(err)
	}
	if err := second.rt.Approve(ctx, "fam", "t2c1", p); err != nil {
		t.Fatal(err)
	}
	if run, err = second.rt.Await(ctx, "fam"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("second process: %+v %v", run, err)
	}
	if err := second.tel.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		if s.SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
			t.Errorf("span %s is in another trace", s.Name)
		}
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), canary) {
				t.Errorf("span %s attribute %s leaks the secret", s.Name, a.Key)
			}
		}
		if strings.Contains(s.Status.Description, canary) {
			t.Errorf("span %s status leaks the secret", s.Name)
		}
	}
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		if len(byName[name]) != 1 {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("want one %q span, have: %s", name, strings.Join(names, ", "))
		}
		return byName[name][0]
	}
	root := one("invoke_agent boss")
	child := one("invoke_agent researcher")
	delegation := one("execute_tool researcher")
	chargeSpan := one("execute_tool charge")
	if root.Parent.IsValid() {
		t.Errorf("the root run's span has a parent")
	}
	if child.Parent.SpanID() != delegation.SpanContext.SpanID() {
		t.Errorf("the child's run is not under the call that started it")
	}
	for _, s := range append(byName["chat boss"], delegation, chargeSpan) {
		if s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s is not under the run's span", s.Name)
		}
	}
	// Three attempts of the boss: one failed (a retry), three replies.
	chats := byName["chat boss"]
	if len(chats) != 4 {
		t.Fatalf("chat boss spans: %d, want 4 (a failure and three replies)", len(chats))
	}
	failed := 0
	for _, c := range chats {
		if c.Status.Code == codes.Error {
			failed++
			if !has(c.Attributes, "error.type", "overloaded") {
				t.Errorf("failed chat attributes: %v", c.Attributes)
			}
		} else if !has(c.Attributes, "gen_ai.provider.name", "scripted") || !hasKey(c.Attributes, "gen_ai.usage.input_tokens") {
			t.Errorf("chat attributes: %v", c.Attributes)
		}
	}
	if failed != 1 {
		t.Errorf("failed chats: %d", failed)
	}
	if !has(chargeSpan.Attributes, "hitch.policy.verdict", "approval") || !has(chargeSpan.Attributes, "gen_ai.tool.call.id", "t2c1") {
		t.Errorf("charge span attributes: %v", chargeSpan.Attributes)
	}
	events := map[string]int{}
	for _, e := range root.Events {
		events[e.Name]++
	}
	if events["model.retry"] != 1 || events["policy.decision"] != 2 || events["call.rejected"] != 1 || events["approval.granted"] != 1 || events["run.waiting"] < 1 {
		t.Errorf("run span events: %v", events)
	}
	if !root.StartTime.Before(root.EndTime) || chargeSpan.StartTime.Before(root.StartTime) || chargeSpan.EndTime.After(root.EndTime) {
		t.Errorf("times: run %v–%v, charge %v–%v", root.StartTime, root.EndTime, chargeSpan.StartTime, chargeSpan.EndTime)
	}

	names := map[string]bool{}
	for _, m := range collect(t, reader) {
		names[m.Name] = true
	}
	for _, want := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "hitch.tool.calls", "hitch.runs.ended"} {
		if !names[want] {
			t.Errorf("metric %s not recorded (have %v)", want, names)
		}
	}
}

func has(attrs []attribute.KeyValue, key, value string) bool {
	for _, a := range attrs {
		if string(a.Key) == key && a.Value.String() == value {
			return true
		}
	}
	return false
}

func hasKey(attrs []attribute.KeyValue, key string) bool {
	for _, a := range attrs {
		if string(a.Key) == key {
			return true
		}
	}
	return false
}
