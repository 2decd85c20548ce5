package web_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestConsoleDoctorPage: an admin of tenant default sees the checks of the
// deployment, each with its verdict, and a link to them; an operator gets
// neither.
func TestConsoleDoctorPage(t *testing.T) {
	t.Parallel()
	const admin, operator = "doctor-admin-token-0123", "doctor-operator-token-0123"
	ctx := context.Background()
	agent, err := hitch.Build(hitch.Spec{Name: "quick", Model: scripted.New("quick", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}),
		Policy: policy.Rules{{Tools: []string{"*"}, Verdict: policy.Allow}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hitch.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Runtime: rt, Store: st, Agents: []*hitch.Agent{agent}, Tokens: []server.Token{
		{Name: "adm", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken(admin)},
		{Name: "op", Tenant: "default", Role: api.RoleOperator, Hash: server.HashToken(operator)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = st.Close()
	})

	b := &browserless{t: t, h: srv, jar: map[string]*http.Cookie{}}
	b.signIn(admin)
	res, page := b.do("GET", "/doctor", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("admin: GET /doctor: %d\n%s", res.StatusCode, page)
	}
	for _, want := range []string{`id="doctor-verdict"`, ">durability<", "synchronous=FULL", ">commits<", `href="/doctor"`} {
		if !strings.Contains(page, want) {
			t.Errorf("admin: the page lacks %q:\n%s", want, page)
		}
	}
	b = &browserless{t: t, h: srv, jar: map[string]*http.Cookie{}}
	b.signIn(operator)
	if res, page := b.do("GET", "/doctor", nil); res.StatusCode == http.StatusOK || strings.Contains(page, "synchronous=") {
		t.Fatalf("operator: GET /doctor: %d\n%s", res.StatusCode, page)
	}
	if _, page := b.do("GET", "/runs", nil); strings.Contains(page, `href="/doctor"`) {
		t.Errorf("operator: the navigation links the doctor")
	}
}
