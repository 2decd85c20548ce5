package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hitch-dev/hitch/internal/testproc"
)

// writeMeterConfig writes a config whose models are priced: meter takes
// a few slow turns in a window of 4,000 tokens; boss starts a sub-agent.
func writeMeterConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
prices:
  scripted/meter: {input: 1000, output: 1000}
  scripted/boss: {input: 1000, output: 1000}
  scripted/kid: {input: 1000, output: 1000}
models:
  meter: {provider: scripted, script: meter.yaml}
  boss: {provider: scripted, script: boss.yaml}
  kid: {provider: scripted, script: kid.yaml}
agents:
  - {name: meter, model: meter, instructions: You measure things carefully., policy: allow_all, limits: {context_window: 4000}}
  - {name: boss, model: boss, policy: allow_all, sub_agents: [kid]}
  - {name: kid, model: kid, policy: allow_all}
server:
  tokens:
    - {name: admin, role: admin, env: T_ADMIN}
`,
		"meter.yaml": testproc.Script(6, "250ms", "{name: nothing}", "measured"),
		"boss.yaml":  "turns:\n  - calls: [{name: kid, args: '{\"prompt\": \"look\"}'}]\n  - text: boss done\n",
		"kid.yaml":   "turns:\n  - text: kid done\n",
	}
	testproc.WriteFiles(t, dir, files)
	return dir
}

// TestConsoleContextMeter: the run page shows the latest model request's
// context meter (a bar in a fixed space, with its text alternative and a
// legend of every category), the provider's counts, and the family's
// cost; the meter follows the run without moving what is below it.
func TestConsoleContextMeter(t *testing.T) {
	ctx := browser(t)
	base := serve(t, writeMeterConfig(t))
	do(t, ctx, "sign in", signIn(base, tokAdmin), chromedp.WaitVisible(css(".signout button")))

	id := start(t, base, "meter", "measure the room")
	do(t, ctx, "open the running run", chromedp.Navigate(base+"/runs/"+id), chromedp.WaitVisible(css("#context svg.meter")))
	geometry := `(() => { const m = document.querySelector("#context svg.meter").getBoundingClientRect();
		const j = document.querySelector("section.journal").getBoundingClientRect();
		return [m.height, m.width, j.top - m.top].join(" "); })()`
	before := get(t, ctx, "meter geometry", chromedp.Evaluate[string](geometry))
	do(t, ctx, "follow the run to its end", chromedp.WaitReady(css(`body[data-ended="1"]`)), chromedp.WaitReady(css(`#summary[data-status="completed"]`)))
	do(t, ctx, "the meter shows the last request", chromedp.WaitReady(css(`#context .legend`)))
	after := get(t, ctx, "meter geometry", chromedp.Evaluate[string](geometry))
	if !strings.HasPrefix(before, "16 ") || before != after {
		t.Errorf("the meter moved or changed size as the run went on: %q, then %q", before, after)
	}
	r := await(t, base, id)
	alt := get(t, ctx, "meter alternative", chromedp.Evaluate[string](`document.querySelector("#context svg.meter title").textContent`))
	if !strings.Contains(alt, " of 4000 tokens estimated (") || !strings.Contains(alt, "agent instructions 8") || !strings.Contains(alt, "user messages") {
		t.Errorf("meter alternative %q", alt)
	}
	if n := count(t, ctx, "#context .legend tbody tr"); n != 10 {
		t.Errorf("%d legend rows, want every category (10)", n)
	}
	if n := count(t, ctx, "#context svg.meter rect.seg"); n < 3 {
		t.Errorf("%d bar segments, want one for each category that holds tokens", n)
	}
	section := text(t, ctx, "#context")
	for _, want := range []string{"Latest model request: attempt 7, turn 7", "estimator bytes/4", "of the window)", "Window\n4000",
		"Family cost: $", "so far; 1 run"} {
		if !strings.Contains(section, want) {
			t.Errorf("the context section lacks %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, "not reported") || r.Status != "completed" {
		t.Errorf("run %s, section:\n%s", r.Status, section)
	}
	if entries := text(t, ctx, "#entries"); !strings.Contains(entries, "tokens estimated (bytes/4), ") || !strings.Contains(entries, "% of 4000") {
		t.Errorf("the transcript's model calls do not show their estimate:\n%.1500s", entries)
	}
	shot(t, ctx, "run-context")

	boss := start(t, base, "boss", "delegate")
	await(t, base, boss)
	do(t, ctx, "open the family's root", chromedp.Navigate(base+"/runs/"+boss), chromedp.WaitVisible(css("#context .family-cost")))
	if cost := text(t, ctx, "#context .family-cost"); !strings.HasPrefix(cost, "$") || !strings.Contains(cost, "so far; 2 runs") {
		t.Errorf("family cost %q, want the two runs priced", cost)
	}
}
