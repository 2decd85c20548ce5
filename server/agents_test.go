package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// Secret values of the agent-details config: none may reach a client.
const (
	canaryKey    = "sk-canary-model-key-7f3a9c"
	canaryAlice  = "alice-canary-secret-41d2e8"
	canaryInline = "bob-canary-inline-secret-9be0"
	canaryEnv    = "canary-secret-env-value-5c71"
)

// detailConfig writes a config whose agents carry what a listing must not
// show: a model key in a variable, approver secrets in a variable and
// inline, a secret handed to commands.
func detailConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  remote: {provider: openai, model: gpt-4o-mini, base_url: "http://127.0.0.1:9/v1", api_key_env: T_CANARY_KEY}
  quick: {provider: scripted, script: quick.yaml}
secrets:
  deploy: {env: T_CANARY_ENV}
agents:
  - name: billing
    version: 3
    description: Bills customers.
    model: remote
    instructions: Be careful with money.
    tools: [read, glob, bash]
    workspace: ws
    env: {DEPLOY_KEY: deploy}
    hooks:
      - {name: length, point: post_turn, url: "https://hook:url-canary-pw@checks.example/len?token=url-canary-query", secret: deploy}
      - {name: gate, point: pre_tool, match: [bash], command: [./gate.sh], env: {TOKEN: deploy}, priority: 5}
    policy:
      - {name: reads, tools: [read, glob], verdict: allow}
      - {tools: [bash], when: 'args.command.startsWith("echo")', verdict: approval, requirement: money, reason: shell needs a person}
    limits: {model_attempts: 5, tool_timeout: 30s, approval_expiry: infinite, max_tokens: 5000}
    budget: {tokens: 100000, usd: 2.5, model_calls: 20, wall_time: 1h}
    approvers:
      - {name: alice, secret_env: T_CANARY_ALICE, requirements: [money]}
      - {name: bob, secret: ` + canaryInline + `, requirements: ["*"]}
  - {name: quick, model: quick, policy: allow_all, budget: {model_calls: 5, tool_calls: 3}}
server:
  tokens:
    - {name: view, role: viewer, env: T_VIEW}
    - {name: admin, role: admin, env: T_ADMIN}
sandbox:
  require_isolation: false
`,
		"quick.yaml": "turns:\n  - text: quick done\n",
		"gate.sh":    "#!/bin/sh\n",
	}
	testproc.WriteFiles(t, dir, files)
	if err := os.Chmod(filepath.Join(dir, "gate.sh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestAgentDetails(t *testing.T) {
	t.Setenv("T_CANARY_KEY", canaryKey)
	t.Setenv("T_CANARY_ALICE", canaryAlice)
	t.Setenv("T_CANARY_ENV", canaryEnv)
	t.Setenv("T_VIEW", tokView)
	dir := detailConfig(t)
	p := serve(t, dir)
	s := loadSpec(t, p.URL, tokView)
	view := &client{t: t, url: p.URL, token: tokView, spec: s}

	list := view.do("GET", "/v1/agents", nil).want(t, 200, "")
	var as api.Agents
	list.decode(t, &as)
	if len(as.Agents) != 2 || as.Agents[0].Name != "billing" || !strings.Contains(as.Agents[0].Model, "gpt-4o-mini") || as.Agents[0].Description != "Bills customers." {
		t.Errorf("agents %+v", as)
	}
	one := view.do("GET", "/v1/agents/billing", nil).want(t, 200, "")
	var d api.AgentDetail
	one.decode(t, &d)
	if d.Name != "billing" || d.Version != 3 || !strings.Contains(d.Model, "gpt-4o-mini") || d.Instructions != "Be careful with money." || !d.Workspace {
		t.Errorf("detail %+v", d)
	}
	var tools []string
	for _, tl := range d.Tools {
		tools = append(tools, tl.Name)
	}
	if strings.Join(tools, ",") != "read,glob,bash" {
		t.Errorf("tools %v", tools)
	}
	if d.Policy.Kind != "rules" || len(d.Policy.Rules) != 2 || d.Policy.Rules[0].Name != "reads" || d.Policy.Rules[0].Verdict != "allow" ||
		d.Policy.Rules[1].Verdict != "approval" || d.Policy.Rules[1].Requirement != "money" || !strings.Contains(d.Policy.Rules[1].When, "startsWith") {
		t.Errorf("policy %+v", d.Policy)
	}
	if l := d.Limits; l.ModelAttempts != 5 || l.ToolTimeout != "30s" || l.ApprovalExpiry != "infinite" || l.MaxTokens != 5000 || l.ToolConcurrency != 4 {
		t.Errorf("limits %+v", l)
	}
	if b := d.Budget; b == nil || b.Tokens != 100000 || b.USD != 2.5 || b.ModelCalls != 20 || b.ToolCalls != 0 || b.WallTime != "1h0m0s" {
		t.Errorf("budget %+v", d.Budget)
	}
	if ap := d.Approvers; ap.Kind != "listed" || len(ap.Members) != 2 || ap.Members[0].Name != "alice" || ap.Members[0].Requirements[0] != "money" || ap.Members[1].Name != "bob" {
		t.Errorf("approvers %+v", d.Approvers)
	}
	if hs := d.HookList; len(hs) != 2 || hs[0].Name != "gate" || hs[0].Point != "pre_tool" || hs[0].Kind != "command" || hs[0].OnError != "fail_closed" ||
		hs[0].Match[0] != "bash" || hs[1].Name != "length" || hs[1].Kind != "webhook" || hs[1].Target != "https://hook:xxxxx@checks.example/len" || !d.Hooks {
		t.Errorf("hooks %+v", d.HookList)
	}
	var q api.AgentDetail
	view.do("GET", "/v1/agents/quick", nil).want(t, 200, "").decode(t, &q)
	if q.Policy.Kind != "allow_all" || q.Approvers.Kind != "none" || len(q.Tools) != 0 || q.Budget == nil || q.Budget.ToolCalls != 3 {
		t.Errorf("quick %+v", q)
	}
	view.do("GET", "/v1/agents/nope", nil).want(t, 404, api.TypeNotFound)

	// The console shows the same, through a signed-in browser's requests.
	console := signIn(t, p.URL, tokView)
	listHTML := console.page(t, "/agents")
	if !strings.Contains(listHTML, `href="/agents/billing"`) {
		t.Errorf("the agents list does not link the agent page:\n%s", listHTML)
	}
	pageHTML := console.page(t, "/agents/billing")
	for _, want := range []string{"gpt-4o-mini", "alice", "bob", "money", "startsWith", "Be careful with money.", "gate.sh", "checks.example/len"} {
		if !strings.Contains(pageHTML, want) {
			t.Errorf("the agent page lacks %q", want)
		}
	}
	// No secret value anywhere a client can read, nor the variable that
	// holds the model's key.
	for name, body := range map[string]string{"list": string(list.body), "detail": string(one.body), "list page": listHTML, "agent page": pageHTML} {
		for _, secret := range []string{canaryKey, canaryAlice, canaryInline, canaryEnv, "T_CANARY_KEY", "T_CANARY_ALICE", "T_CANARY_ENV", "url-canary"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q", name, secret)
			}
		}
	}
}

func TestRunBudget(t *testing.T) {
	t.Setenv("T_CANARY_KEY", canaryKey)
	t.Setenv("T_CANARY_ALICE", canaryAlice)
	t.Setenv("T_CANARY_ENV", canaryEnv)
	t.Setenv("T_VIEW", tokView)
	t.Setenv("T_ADMIN", tokAdmin)
	p := serve(t, detailConfig(t))
	s := loadSpec(t, p.URL, tokView)
	admin := &client{t: t, url: p.URL, token: tokAdmin, spec: s}
	view := &client{t: t, url: p.URL, token: tokView, spec: s}
	start(t, admin, "quick", "go", "b1")
	wait(t, view, "b1")
	var b api.RunBudget
	view.do("GET", "/v1/runs/b1/budget", nil).want(t, 200, "").decode(t, &b)
	if b.RunID != "b1" || b.RootID != "b1" {
		t.Fatalf("budget %+v", b)
	}
	got := map[string]api.BudgetCounter{}
	for _, c := range b.Counters {
		got[c.Scope+"."+c.Name] = c
	}
	if len(got) != 3 {
		t.Errorf("counters %+v", b.Counters)
	}
	if c := got["family.model_calls"]; c.Limit != 5 || c.Used == nil || *c.Used != 1 || c.Left == nil || *c.Left != 4 {
		t.Errorf("family model calls %+v", c)
	}
	if c := got["family.tool_calls"]; c.Limit != 3 || c.Used == nil || *c.Used != 0 || *c.Left != 3 {
		t.Errorf("family tool calls %+v", c)
	}
	if c := got["run.model_attempts"]; c.Limit != 8 || c.Used == nil || *c.Used != 1 || *c.Left != 7 {
		t.Errorf("run model attempts %+v", c)
	}
	view.do("GET", "/v1/runs/nope/budget", nil).want(t, 404, api.TypeNotFound)
}

// console is a signed-in browser's requests, without a browser.
type console struct {
	url string
	hc  *http.Client
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func signIn(t *testing.T, base, token string) *console {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &console{url: base, hc: &http.Client{Jar: jar}}
	m := csrfField.FindStringSubmatch(c.page(t, "/signin"))
	if m == nil {
		t.Fatal("the sign-in page has no csrf field")
	}
	resp, err := c.hc.PostForm(base+"/signin", url.Values{"csrf": {m[1]}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path == "/signin" {
		t.Fatal("sign-in refused")
	}
	return c
}

func (c *console) page(t *testing.T, path string) string {
	t.Helper()
	resp, err := c.hc.Get(c.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
	}
	return string(b)
}
