package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/hitch-dev/hitch/api"
)

// headerHardCap is how much larger than Limits.MaxHeaderBytes the HTTP
// server lets a header block be before it cuts it itself, with a bare 431
// that is not a problem: between the two, withEntry answers the problem.
const headerHardCap = 4

// withEntry guards the door, before authentication: a header block over
// the limit is a 431 problem; without tokens, only loopback Host names are
// served and a state-changing request from a browser must come from the
// same origin (see sameOrigin).
func (s *Server) withEntry(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := headerBytes(r); n > s.cfg.Limits.MaxHeaderBytes {
			writeProblem(w, r, api.NewProblem(api.TypeHeaderTooLarge,
				fmt.Sprintf("the request's header block is %d bytes: at most %d", n, s.cfg.Limits.MaxHeaderBytes)))
			return
		}
		if s.cfg.Tokens == nil {
			if !loopbackHost(r.Host) {
				writeProblem(w, r, api.NewProblem(api.TypeForbidden,
					"without server.tokens this server answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1])"))
				return
			}
			if stateChanging(r.Method) && !sameOrigin(r) {
				writeProblem(w, r, api.NewProblem(api.TypeForbidden,
					"without server.tokens a browser may change state only from this server's own pages"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// headerBytes is about what the request's header block took on the wire:
// the request line and every field.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len("Host: ") + len(r.Host) + 2
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n
}

// loopbackHost reports whether a Host header names this machine by a
// loopback name. A DNS-rebinding page reaches a loopback address under
// its own name, which this refuses.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// sameOrigin reports whether a request comes from this server's own pages,
// or from no browser at all. A browser names the page's origin in Origin
// and says how it relates in Sec-Fetch-Site; a client that sends neither
// (curl, the CLI, the Go client) is not a page another site can drive.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host)
}

// jsonBody reports whether a request with a body declares it JSON.
func jsonBody(r *http.Request) bool {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
