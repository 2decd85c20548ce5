// Package web is the console: server-rendered pages over the HTTP API,
// embedded in the binary and mounted at / by hitch serve. It holds no
// second copy of the API's rules: every page reads and acts through the
// API's own handlers, in process, with the signed-in token, so the
// server's authentication, roles and tenant checks decide what a page
// shows. See docs/console.md.
package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/routes"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Cookie names.
const (
	sessionCookie = "hitch_session"
	preCookie     = "hitch_pre" // the sign-in form's anti-forgery pair
	csrfField     = "csrf"
)

// Bounds of the console (rows of the defaults table, docs/defaults.md).
const (
	// JournalPage is how many journal entries a run page shows at first
	// and each "older" load adds.
	JournalPage = 200
	// DefaultSessionMaxAge is how long a sign-in lasts.
	DefaultSessionMaxAge = 12 * time.Hour
	// MaxShown bounds the text of one journal entry on a page.
	MaxShown = 16 << 10
	// LiveWriteTimeout bounds one write to a browser's live transcript.
	LiveWriteTimeout = 30 * time.Second
	// ApproverKept is how long the console remembers the name an approval
	// was last answered with, to fill the next form.
	ApproverKept = 30 * 24 * time.Hour
	// LiveNodes bounds the elements a run page's transcript keeps: past it
	// the oldest entries leave the page as new ones come (they are read
	// again on demand), so a page left open on a long run stays small.
	LiveNodes = 3000
	// NavApprovals bounds the pending approvals the navigation counts;
	// past it the count says "100+".
	NavApprovals = 100
	// RunsRefresh is how often the first page of the runs list reads
	// itself again, while the browser shows it, so statuses change and
	// new runs appear without a reload.
	RunsRefresh = 2 * time.Second
)

// Config configures a Console.
type Config struct {
	// API serves /v1 with bearer-token authentication. Required.
	API http.Handler
	// SessionMaxAge bounds a sign-in; default DefaultSessionMaxAge.
	SessionMaxAge time.Duration
}

// Console serves the pages.
type Console struct {
	api    http.Handler
	maxAge time.Duration
	key    []byte // signs the anti-forgery tokens
	mux    *routes.Mux
	tmpl   map[string]*template.Template
}

// Mount returns a handler that serves the API under /v1, /healthz and
// /readyz, and the console everywhere else.
func Mount(apiHandler http.Handler, cfg Config) (http.Handler, error) {
	cfg.API = apiHandler
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return c.WithAPI(), nil
}

// WithAPI returns a handler that serves the console's API (Config.API)
// under /v1, /healthz and /readyz, and the console everywhere else.
func (c *Console) WithAPI() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", c.api)
	mux.Handle("/healthz", c.api)
	mux.Handle("/readyz", c.api)
	mux.Handle("/", c)
	return mux
}

// New returns a console over the API handler.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, errors.New("new console: Config.API is required")
	}
	if cfg.SessionMaxAge <= 0 {
		cfg.SessionMaxAge = DefaultSessionMaxAge
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("new console: %w", err)
	}
	c := &Console{api: cfg.API, maxAge: cfg.SessionMaxAge, key: key, mux: routes.New(), tmpl: map[string]*template.Template{}}
	for _, page := range []string{"signin", "runs", "run", "approvals", "agents", "error", "entries", "workspace", "sessions", "session", "agent", "timeline", "doctor"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/entry.html", "templates/meter.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("new console: parse %s: %w", page, err)
		}
		c.tmpl[page] = t
	}
	static, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	c.mux.HandleFunc("GET /signin", c.signinPage)
	c.mux.HandleFunc("POST /signin", c.signin)
	c.mux.HandleFunc("POST /signout", c.signed(c.signout))
	c.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/runs", http.StatusSeeOther) })
	c.mux.HandleFunc("GET /runs", c.signed(c.runsPage))
	c.mux.HandleFunc("GET /runs/{id}", c.signed(c.runPage))
	c.mux.HandleFunc("GET /runs/{id}/older", c.signed(c.olderEntries))
	c.mux.HandleFunc("GET /runs/{id}/entries/{pos}", c.signed(c.rawEntry))
	c.mux.HandleFunc("GET /runs/{id}/timeline", c.signed(c.timeline))
	c.mux.HandleFunc("GET /runs/{id}/live", c.signed(c.live))
	c.mux.HandleFunc("POST /runs/{id}/cancel", c.signed(c.cancel))
	c.mux.HandleFunc("POST /runs/{id}/fork", c.signed(c.fork))
	c.mux.HandleFunc("POST /runs/{id}/reconcile", c.signed(c.reconcile))
	c.mux.HandleFunc("GET /runs/{id}/workspace", c.signed(c.workspacePage))
	c.mux.HandleFunc("POST /runs/{id}/workspace", c.signed(c.workspace))
	c.mux.HandleFunc("POST /runs/{id}/approvals/{call}", c.signed(c.answer))
	c.mux.HandleFunc("GET /approvals", c.signed(c.approvalsPage))
	c.mux.HandleFunc("GET /doctor", c.signed(c.doctorPage))
	c.mux.HandleFunc("GET /agents", c.signed(c.agentsPage))
	c.registerSessions()
	c.mux.HandleFunc("GET /agents/{name}", c.signed(c.agentPage))
	c.mux.HandleFunc("POST /agents/{name}/start", c.signed(c.startRun))
	c.mux.HandleFunc("POST /agents/{name}/chat", c.signed(c.chat))
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, "error", page{Title: "Not found", Error: "there is no page " + r.URL.Path})
	})
	return c, nil
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// Routes lists the console's routes as registered ("GET /runs/{id}",
// "POST /runs/{id}/cancel" …): its pages and its actions.
func (c *Console) Routes() []string { return c.mux.Patterns() }

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// session is a signed-in viewer.
type session struct {
	token  string // empty: the server's implicit local principal
	cookie string // the session cookie's value, which the CSRF token is bound to
	csrf   string
	me     api.Me // who the token speaks for, as the API says
}

// Why a page went back to the sign-in, as the sign-in page says it.
const (
	whyExpired = "expired"
	whyForged  = "unreadable"
	whyRefused = "refused"
)

var whyText = map[string]string{
	whyExpired: "Your sign-in expired: sign in again.",
	whyForged:  "Your sign-in could not be read (the cookie was changed, or is not from this console): sign in again.",
	whyRefused: "This server no longer accepts the token you signed in with: sign in with a current one.",
}

// signInGrace is how long the browser keeps a session cookie past the
// sign-in's end, so the console can say it expired rather than show a
// bare sign-in form.
const signInGrace = 24 * time.Hour

// csrfFor returns the anti-forgery token bound to a cookie value.
func (c *Console) csrfFor(purpose, value string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(purpose + "\x00" + value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionCookieValue is the session cookie of a token signed in at a
// time: "t.<unix seconds>.<token, base64url>". The time is not secret or
// signed: a holder who changes it only lengthens a sign-in they could
// renew with the same token.
func sessionCookieValue(token string, at time.Time) string {
	return "t." + strconv.FormatInt(at.Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString([]byte(token))
}

// sessionOf reads the request's sign-in; why says what is wrong with a
// cookie that is there but cannot be used (empty when there is none).
func (c *Console) sessionOf(r *http.Request) (s session, ok bool, why string) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false, ""
	}
	at, b64, found := strings.Cut(strings.TrimPrefix(ck.Value, "t."), ".")
	secs, err := strconv.ParseInt(at, 10, 64)
	if !strings.HasPrefix(ck.Value, "t.") || !found || err != nil {
		return session{}, false, whyForged
	}
	tok, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return session{}, false, whyForged
	}
	if time.Since(time.Unix(secs, 0)) > c.maxAge {
		return session{}, false, whyExpired
	}
	return session{token: string(tok), cookie: ck.Value, csrf: c.csrfFor("session", ck.Value)}, true, ""
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) session { s, _ := ctx.Value(sessionKey{}).(session); return s }

// signed wraps a handler that needs a sign-in; every POST must carry the
// session's anti-forgery token.
func (c *Console) signed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok, why := c.sessionOf(r)
		if !ok {
			c.signedOut(w, r, why)
			return
		}
		res := c.call(r.Context(), s.token, http.MethodGet, "/v1/me", nil)
		if res.status == http.StatusUnauthorized {
			c.signedOut(w, r, whyRefused)
			return
		}
		if !res.ok() || res.decode(&s.me) != nil {
			c.render(w, r, res.status, "error", page{Title: "Unavailable", Error: "read who you are: " + res.message()})
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if err := r.ParseForm(); err != nil {
				c.render(w, r, http.StatusBadRequest, "error", page{Title: "Bad form", Error: "read form: " + err.Error()})
				return
			}
			if !hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(s.csrf)) {
				c.render(w, r, http.StatusForbidden, "error", page{Title: "Refused", Error: "the form's anti-forgery token is missing or stale: reload the page and try again"})
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	}
}

// signedOut sends a request without a usable sign-in back to the sign-in
// page, saying why; a form post gets an error page, since its redirect
// would lose what was typed. A cookie that cannot be used is dropped.
func (c *Console) signedOut(w http.ResponseWriter, r *http.Request, why string) {
	if why != "" {
		setCookie(w, r, sessionCookie, "", -1)
	}
	if r.Method == http.MethodGet {
		q := url.Values{"next": {r.URL.RequestURI()}}
		if why != "" {
			q.Set("why", why)
		}
		http.Redirect(w, r, "/signin?"+q.Encode(), http.StatusSeeOther)
		return
	}
	msg := "you are not signed in: sign in and try again"
	if t, ok := whyText[why]; ok {
		msg = t
	}
	c.render(w, r, http.StatusUnauthorized, "error", page{Title: "Signed out", Error: msg})
}

// setCookie sets a cookie with the console's flags: HttpOnly,
// SameSite=Strict, Secure when the request came over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if maxAge < 0 {
		ck.MaxAge = -1
	} else if maxAge > 0 {
		ck.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, ck)
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	c.signinForm(w, r, http.StatusOK, whyText[r.FormValue("why")])
}

func (c *Console) signinForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	pre := make([]byte, 18)
	_, _ = rand.Read(pre)
	v := base64.RawURLEncoding.EncodeToString(pre)
	setCookie(w, r, preCookie, v, 30*time.Minute)
	next := r.FormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		next = "/runs"
	}
	c.render(w, r, status, "signin", page{Title: "Sign in", Error: msg, CSRF: c.csrfFor("signin", v), Data: next})
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		c.signinForm(w, r, http.StatusBadRequest, "read form: "+err.Error())
		return
	}
	pre, err := r.Cookie(preCookie)
	if err != nil || !hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(c.csrfFor("signin", pre.Value))) {
		c.signinForm(w, r, http.StatusForbidden, "the sign-in form is stale: try again")
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	res := c.call(r.Context(), tok, http.MethodGet, "/v1/me", nil)
	if res.status == http.StatusUnauthorized || (tok == "" && res.status != http.StatusOK) {
		c.signinForm(w, r, http.StatusUnauthorized, "that token is not accepted by this server")
		return
	}
	if res.status != http.StatusOK {
		c.signinForm(w, r, res.status, res.message())
		return
	}
	setCookie(w, r, preCookie, "", -1)
	setCookie(w, r, sessionCookie, sessionCookieValue(tok, time.Now()), c.maxAge+signInGrace)
	next := r.PostFormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		next = "/runs"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// result is the API's answer to an in-process call.
type result struct {
	status int
	body   []byte
}

func (res result) ok() bool { return res.status >= 200 && res.status < 300 }

// problem decodes a refusal.
func (res result) problem() api.Problem {
	var p api.Problem
	_ = json.Unmarshal(res.body, &p)
	return p
}

// message is a refusal in words.
func (res result) message() string {
	p := res.problem()
	if p.Detail != "" {
		return p.Detail
	}
	if p.Title != "" {
		return p.Title
	}
	return fmt.Sprintf("the server answered %d", res.status)
}

func (res result) decode(v any) error {
	if err := json.Unmarshal(res.body, v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// recorder is the ResponseWriter of an in-process call.
type recorder struct {
	h      http.Header
	status int
	buf    bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.buf.Write(b)
}

// call asks the API, in process, as the token's holder.
func (c *Console) call(ctx context.Context, token, method, path string, body any) result {
	return c.callWith(ctx, token, method, path, "", body)
}

// callWith is call with an Idempotency-Key, when key is not empty.
func (c *Console) callWith(ctx context.Context, token, method, path, key string, body any) result {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return result{status: http.StatusBadRequest, body: []byte(`{"detail":"bad request"}`)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.RemoteAddr = "127.0.0.1:0"
	rec := &recorder{h: http.Header{}}
	c.api.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return result{status: rec.status, body: rec.buf.Bytes()}
}

// get calls the API as the request's session.
func (c *Console) get(r *http.Request, path string, v any) result {
	res := c.call(r.Context(), sessionFrom(r.Context()).token, http.MethodGet, path, nil)
	if res.ok() && v != nil {
		if err := res.decode(v); err != nil {
			return result{status: http.StatusInternalServerError, body: []byte(`{"detail":"` + err.Error() + `"}`)}
		}
	}
	return res
}

func (c *Console) post(r *http.Request, path string, body any) result {
	return c.call(r.Context(), sessionFrom(r.Context()).token, http.MethodPost, path, body)
}

// refused renders an API refusal; a token the server no longer accepts
// goes back to the sign-in.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, res result) {
	if res.status == http.StatusUnauthorized {
		c.signedOut(w, r, whyRefused)
		return
	}
	title := http.StatusText(res.status)
	c.render(w, r, res.status, "error", page{Title: title, Error: res.message()})
}

// page is what every template gets.
type page struct {
	Title    string
	Nav      string
	Error    string
	Notice   string
	CSRF     string
	SignedIn bool
	Data     any
	// Me is who the signed-in token speaks for; controls its role may
	// not use are not shown (the API refuses them anyway).
	Me api.Me
	// Pending counts the approval requests waiting ("100+" past a page),
	// for the navigation.
	Pending string
	// Approver is the name the viewer last answered an approval with.
	Approver string
}

// roleRank orders the roles, as the API does.
var roleRank = map[string]int{api.RoleViewer: 1, api.RoleOperator: 2, api.RoleAdmin: 3}

// Can reports whether the signed-in role reaches role.
func (p page) Can(role string) bool { return roleRank[p.Me.Role] >= roleRank[role] }

// approverCookie remembers the name the viewer answers approvals with
// (never the secret), for the next form.
const approverCookie = "hitch_approver"

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if s, ok, _ := c.sessionOf(r); ok {
		p.SignedIn = true
		if p.CSRF == "" {
			p.CSRF = s.csrf
		}
		p.Me = sessionFrom(r.Context()).me
		if p.Me.Role == "" {
			// A page rendered outside signed (the sign-in's refusals)
			// offers no controls.
			p.Me.Role = "none"
		}
		if ck, err := r.Cookie(approverCookie); err == nil {
			p.Approver, _ = url.QueryUnescape(ck.Value)
		}
		if name != "error" && name != "signin" {
			p.Pending = c.pendingCount(r)
		}
	}
	var buf bytes.Buffer
	if err := c.tmpl[name].Execute(&buf, p); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pendingCount says how many approval requests wait, for the navigation:
// one page of the API's list, so past it the count says "100+".
func (c *Console) pendingCount(r *http.Request) string {
	var ap api.ApprovalPage
	if res := c.get(r, "/v1/approvals?limit="+strconv.Itoa(NavApprovals), &ap); !res.ok() {
		return ""
	}
	if ap.Next != "" {
		return strconv.Itoa(len(ap.Approvals)) + "+"
	}
	return strconv.Itoa(len(ap.Approvals))
}

// back redirects after a POST, to the page the form came from, with a
// notice or an error in the query.
func back(w http.ResponseWriter, r *http.Request, to, key, msg string) {
	u := to
	if msg != "" {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + key + "=" + url.QueryEscape(msg)
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// sseScanner reads the events of an API stream.
type sseEvent struct {
	id, event, data string
}

func readSSE(r io.Reader, each func(sseEvent) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.event != "" || len(data) > 0 {
				ev.data = strings.Join(data, "\n")
				if !each(ev) {
					return
				}
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
			if line == ": heartbeat" && !each(sseEvent{}) {
				return
			}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
}
