package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// inZone makes the browser's time zone zone.
func inZone(zone string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return chromedp.Void{}, err
	}
}

// TestConsoleRunsLive watches the runs list in the browser: a run started
// elsewhere appears on it and its status changes to completed without a
// reload; then the list is filtered by text and by a time window typed
// in the viewer's zone, from the keyboard.
func TestConsoleRunsLive(t *testing.T) {
	ctx := browser(t)
	base := serve(t, writeConfig(t))
	// A zone half an hour off UTC, so a window typed in it is not the
	// same clock time in UTC.
	do(t, ctx, "zone", inZone("Asia/Kolkata"))
	do(t, ctx, "sign in", signIn(base, tokAdmin), chromedp.WaitVisible(css(".empty")),
		chromedp.WaitReady(css(`#runs-live[data-refresh]`)))
	// A mark that a reload would wipe.
	do(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameLoad = 1`))
	sameLoad := func(t *testing.T) {
		t.Helper()
		if !get(t, ctx, "same page load", chromedp.Evaluate[bool](`window.__sameLoad === 1`)) {
			t.Fatal("the page was reloaded")
		}
	}

	t.Run("a run appears and its status changes live", func(t *testing.T) {
		id := start(t, base, "slow", "Refund order 17: list the workspace")
		row := `tr[data-run="` + id + `"]`
		do(t, ctx, "the run appears", chromedp.WaitVisible(css(row)))
		before := text(t, ctx, row+" .st")
		if before == "completed" {
			t.Fatalf("the run was completed when it appeared: the test saw no change")
		}
		shot(t, ctx, "runs-live")
		do(t, ctx, "its status changes", chromedp.WaitVisible(css(row+" .st-completed")))
		sameLoad(t)
		if total := text(t, ctx, `#counts li:first-child b`); total != "1" {
			t.Fatalf("count of all runs %q, want 1", total)
		}
		if n := text(t, ctx, `#counts a.st-completed b`); n != "1" {
			t.Fatalf("count of completed runs %q, want 1", n)
		}
		t.Logf("run %s went from %s to completed on the list without a reload", id, before)
	})

	kid := start(t, base, "kid", "Ship the parcel")
	await(t, base, kid)
	do(t, ctx, "the second run appears", chromedp.WaitVisible(css(`tr[data-run="`+kid+`"]`)))

	t.Run("filter by text from the keyboard", func(t *testing.T) {
		do(t, ctx, "type a text", chromedp.Focus(css(`input[name="q"]`)), chromedp.SendKeys(css(`input[name="q"]`), "REFUND"+kb.Enter),
			chromedp.WaitReady(css(`input[name="q"][value="REFUND"]`)), chromedp.WaitReady(css(`html[data-ready="1"]`)))
		loc := get(t, ctx, "location", chromedp.Location())
		if !strings.Contains(loc, "q=REFUND") || strings.Contains(loc, "from=") {
			t.Fatalf("filtered to %s", loc)
		}
		if n := count(t, ctx, "#run-rows tr"); n != 1 || !strings.Contains(text(t, ctx, "#run-rows"), "Refund order 17") {
			t.Fatalf("%d rows for REFUND: %s", n, text(t, ctx, "#run-rows"))
		}
		if total := text(t, ctx, `#counts li:first-child b`); total != "1" {
			t.Fatalf("count of refunds %q, want 1", total)
		}
	})

	t.Run("filter by time in the viewer's zone", func(t *testing.T) {
		// From a minute ahead, in the browser's own zone: nothing yet.
		setFrom := func(offsetMS string) chromedp.Action[chromedp.Void] {
			return chromedp.Evaluate[chromedp.Void](`(() => {
				const d = new Date(Date.now() + ` + offsetMS + `), p = (n) => String(n).padStart(2, "0");
				const f = document.querySelector("form.filters");
				f.elements["q"].value = "";
				f.elements["from"].value = d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" + p(d.getHours()) + ":" + p(d.getMinutes());
				sessionStorage.setItem("typed", f.elements["from"].value);
			})()`)
		}
		do(t, ctx, "from a minute ahead", setFrom("60000"), chromedp.Focus(css(`input[name="from"]`)), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(css("p.empty")), chromedp.WaitReady(css(`html[data-ready="1"]`)))
		loc := get(t, ctx, "location", chromedp.Location())
		u, err := url.Parse(loc)
		// The URL carries the typed local time in UTC.
		want := get(t, ctx, "typed in UTC", chromedp.Evaluate[string](`new Date(sessionStorage.getItem("typed")).toISOString()`))
		if err != nil || u.Query().Get("created_after") != want {
			t.Fatalf("the window went as %s, want created_after=%s", loc, want)
		}
		if typed := get(t, ctx, "typed", chromedp.Evaluate[string](`sessionStorage.getItem("typed")`)); strings.HasPrefix(want, typed) {
			t.Fatalf("typed %s in Asia/Kolkata and sent %s: the zone was not applied", typed, want)
		}
		if total := text(t, ctx, `#counts li:first-child b`); total != "0" {
			t.Fatalf("count from a minute ahead %q, want 0", total)
		}
		do(t, ctx, "from ten minutes ago", setFrom("-600000"), chromedp.Focus(css(`input[name="from"]`)), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(css("#run-rows")), chromedp.WaitReady(css(`html[data-ready="1"]`)))
		if n := count(t, ctx, "#run-rows tr"); n != 2 {
			t.Fatalf("%d rows from ten minutes ago, want 2", n)
		}
		// The window is shown again in the viewer's zone, as typed.
		shown := get(t, ctx, "from", chromedp.Evaluate[string](`document.querySelector('input[name="from"]').value`))
		if typed := get(t, ctx, "typed", chromedp.Evaluate[string](`sessionStorage.getItem("typed")`)); shown != typed {
			t.Fatalf("from shows %q, typed %q", shown, typed)
		}
		do(t, ctx, "narrow", chromedp.EmulateViewport(360, 780), chromedp.Reload(), chromedp.WaitVisible(css("#run-rows")))
		if w := get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
			t.Fatalf("the filtered runs page is %d px wide at 360", w)
		}
		shot(t, ctx, "runs-filters-360")
	})
}
