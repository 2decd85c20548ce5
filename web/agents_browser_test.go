package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hitch-dev/hitch/internal/testproc"
)

// TestConsoleAgentAndBudget opens an agent's page from the agents list,
// and a run's page, which shows its budget and what is left.
func TestConsoleAgentAndBudget(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  ops: {provider: scripted, script: ops.yaml}
agents:
  - name: ops
    description: Looks around.
    model: ops
    tools: [glob]
    workspace: .
    policy:
      - {name: looks, tools: [glob], verdict: allow}
      - {tools: ["*"], verdict: approval, requirement: ops}
    approvers:
      - {name: carol, secret: carol-secret-never-shown, requirements: [ops]}
    limits: {model_attempts: 6}
    budget: {model_calls: 10, tool_calls: 4}
sandbox:
  require_isolation: false
server:
  tokens:
    - {name: admin, role: admin, env: T_ADMIN}
`,
		"ops.yaml": "turns:\n  - calls: [{name: glob, args: '{\"pattern\": \"*.yaml\"}'}]\n  - text: ops done\n",
	}
	testproc.WriteFiles(t, dir, files)
	base := serve(t, dir)
	id := start(t, base, "ops", "look")
	if r := await(t, base, id); r.Status != "completed" {
		t.Fatalf("run %s is %s", id, r.Status)
	}

	do(t, ctx, "sign in", signIn(base, tokAdmin), chromedp.WaitVisible(css("table.runs")))
	do(t, ctx, "agents", chromedp.Navigate(base+"/agents"), chromedp.WaitVisible(css(`a[href="/agents/ops"]`)))
	do(t, ctx, "open the agent", chromedp.Click(css(`a[href="/agents/ops"]`)), chromedp.WaitVisible(chromedp.ID("policy")))
	shot(t, ctx, "agent")
	page := text(t, ctx, "main")
	for _, want := range []string{"scripted/ops", "Looks around.", "glob", "looks", "approval", "carol", "Model attempts", "6", "Model calls", "10"} {
		if !strings.Contains(page, want) {
			t.Errorf("the agent page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "carol-secret-never-shown") {
		t.Error("the agent page shows an approver's secret")
	}

	do(t, ctx, "preview", chromedp.SendKeys(chromedp.ID("preview-input"), "look again"),
		chromedp.Click(chromedp.ID("preview-show")), chromedp.WaitVisible(chromedp.ID("preview-parts")))
	shot(t, ctx, "agent-preview")
	parts := text(t, ctx, "#preview-parts")
	for _, want := range []string{"input", "look again", "tool", "glob"} {
		if !strings.Contains(parts, want) {
			t.Errorf("the preview lacks %q:\n%s", want, parts)
		}
	}
	do(t, ctx, "preview of no session", chromedp.SendKeys(chromedp.ID("preview-session"), "nope"),
		chromedp.Click(chromedp.ID("preview-show")), chromedp.WaitVisible(chromedp.ID("preview-error")))
	if e := text(t, ctx, "#preview-error"); !strings.Contains(e, "session") {
		t.Errorf("preview of a session that does not exist: %q", e)
	}

	do(t, ctx, "run page", chromedp.Navigate(base+"/runs/"+id), chromedp.WaitVisible(chromedp.ID("budget")))
	shot(t, ctx, "run-budget")
	row := func(counter string) string {
		js := `Array.from(document.querySelectorAll('#budget tr[data-counter="` + counter + `"] td')).map(c => c.innerText.trim()).join("|")`
		return get(t, ctx, "budget row "+counter, chromedp.Evaluate[string](js))
	}
	for counter, want := range map[string]string{
		"family.model_calls": "family model calls|10|2|8",
		"family.tool_calls":  "family tool calls|4|1|3",
		"run.model_attempts": "this run: model attempts|6|2|4",
	} {
		if got := row(counter); got != want {
			t.Errorf("budget row %s = %q, want %q", counter, got, want)
		}
	}
}
