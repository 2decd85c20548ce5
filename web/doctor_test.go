package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/server"
)

// TestConsoleDoctorPage: an admin of tenant default sees the checks of the
// deployment, each with its verdict, and a link to them; an operator gets
// neither.
func TestConsoleDoctorPage(t *testing.T) {
	t.Parallel()
	const admin, operator = "doctor-admin-token-0123", "doctor-operator-token-0123"
	srv, _ := quickServer(t, false,
		server.Token{Name: "adm", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken(admin)},
		server.Token{Name: "op", Tenant: "default", Role: api.RoleOperator, Hash: server.HashToken(operator)})

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
