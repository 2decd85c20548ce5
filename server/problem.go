package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/sessions"
)

func init() {
	// Every error huma raises (a malformed body, a refused field, a body
	// too large) becomes a problem of the one table, by its status.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		c := api.ClassForStatus(status)
		p := &api.Problem{Type: c.Type, Title: c.Title, Status: c.Status, Detail: msg}
		for _, err := range errs {
			if err == nil {
				continue
			}
			var d huma.ErrorDetailer
			if errors.As(err, &d) {
				ed := d.ErrorDetail()
				loc := ed.Location
				if m := missingProperty.FindStringSubmatch(ed.Message); m != nil {
					loc += "." + m[1] // name the missing field, not its object
				}
				p.Errors = append(p.Errors, api.FieldError{Location: loc, Message: withoutValue(ed.Message, ed.Value)})
				continue
			}
			p.Errors = append(p.Errors, api.FieldError{Message: err.Error()})
		}
		if c.Type == api.TypeInvalid && len(p.Errors) == 0 {
			p.Errors = []api.FieldError{{Location: "body", Message: msg}} // a missing or unreadable body
		}
		if c.Type == api.TypeInternal {
			p.Detail = "internal error"
			p.Errors = nil
		}
		return p
	}
}

var missingProperty = regexp.MustCompile(`^expected required property (\S+) to be present`)

// withoutValue keeps a validation message from repeating the refused
// value (a parser's error may quote it): an answer holds nothing the
// caller sent.
func withoutValue(msg string, v any) string {
	if v == nil {
		return msg
	}
	if s := fmt.Sprint(v); len(s) >= 2 && strings.Contains(msg, s) {
		return "is not a valid value here"
	}
	return msg
}

// invalid refuses a request, naming the field at loc.
func invalid(loc, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	p := api.NewProblem(api.TypeInvalid, loc+": "+msg)
	p.Errors = []api.FieldError{{Location: loc, Message: msg}}
	return p
}

// problemTypes maps the runtime's refusals (hitch.Refusal) to the
// problems of the table; loc names the refused field of an invalid
// request. A refusal not listed is refused. A problem's detail is the
// refusal's fixed text, never the wrapped chain: that names ids, paths and
// texts the caller sent, and a problem never repeats what the caller sent.
var problemTypes = map[error]struct{ typ, loc string }{
	hitch.ErrNotFound:            {api.TypeNotFound, ""},
	hitch.ErrUnknownCall:         {api.TypeNotFound, ""},
	sessions.ErrNotFound:         {api.TypeNotFound, ""},
	sessions.ErrMessageNotFound:  {api.TypeNotFound, ""},
	hitch.ErrRunnerBusy:          {api.TypeBusy, ""},
	hitch.ErrApprovalExpired:     {api.TypeExpired, ""},
	hitch.ErrEnded:               {api.TypeEnded, ""},
	approval.ErrBadCredential:    {api.TypeBadCredential, ""},
	approval.ErrOtherRequirement: {api.TypeBadCredential, ""},
	approval.ErrNoApprovers:      {api.TypeBadCredential, ""},
	approval.ErrOtherApprovers:   {api.TypeBadCredential, ""},
	approval.ErrProofExpired:     {api.TypeBadCredential, ""},
	sessions.ErrAgent:            {api.TypeConflict, ""},
	hitch.ErrBadRunID:            {api.TypeInvalid, "body.id"},
	sessions.ErrBadID:            {api.TypeInvalid, "body.id"},
	sessions.ErrMessageTooLarge:  {api.TypeInvalid, "body.text"},
	hitch.ErrBadCursor:           {api.TypeInvalid, "query.after"},
	hitch.ErrBadFork:             {api.TypeInvalid, "body.at"},
}

// problemOf maps an error of the runtime to a problem of the table. An
// error it does not know is internal: its text is not sent.
func problemOf(err error, op string) error {
	var p *api.Problem
	if errors.As(err, &p) {
		return p
	}
	if errors.Is(err, errStopping) {
		return api.NewProblem(api.TypeUnavailable, errStopping.Error())
	}
	var state *sessions.MessageStateError
	if errors.As(err, &state) {
		return api.NewProblem(api.TypeRefused, fmt.Sprintf("the message is %s, not queued", state.State))
	}
	r := hitch.Refusal(err)
	if r == nil {
		return internalError{op: op, err: err}
	}
	if errors.Is(r, hitch.ErrForbidden) {
		// It names the principal, its role and the role needed: the
		// server's config, not the caller's words.
		return api.NewProblem(api.TypeForbidden, r.Error())
	}
	m, ok := problemTypes[r]
	switch {
	case !ok:
		return api.NewProblem(api.TypeRefused, r.Error())
	case m.loc != "":
		return invalid(m.loc, "%s", r)
	}
	return api.NewProblem(m.typ, r.Error())
}

// internalError is an error whose text stays in the server's log.
type internalError struct {
	op  string
	err error
}

func (e internalError) Error() string { return e.op + ": " + e.err.Error() }

var errStopping = errors.New("the server is stopping")

// writeProblem writes a problem outside huma (auth, unknown routes).
func writeProblem(w http.ResponseWriter, r *http.Request, p *api.Problem) {
	w.Header().Set("Content-Type", api.ProblemContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// problemWriter turns the plain-text errors of net/http (404 and 405 of
// the mux) into problems.
type problemWriter struct {
	http.ResponseWriter
	r       *http.Request
	plain   bool
	written bool
}

func (w *problemWriter) WriteHeader(status int) {
	if w.written {
		return
	}
	w.written = true
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.plain = true
		c := api.ClassForStatus(status)
		if status == http.StatusNotFound {
			c, _ = api.ClassOf(api.TypeNotFound)
		}
		w.Header().Del("X-Content-Type-Options")
		// The path is not repeated: it holds what the caller sent.
		writeProblem(w.ResponseWriter, w.r, &api.Problem{Type: c.Type, Title: c.Title, Status: c.Status, Detail: strings.ToLower(http.StatusText(status))})
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *problemWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	if w.plain {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *problemWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *problemWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
