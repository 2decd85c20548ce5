package api

import (
	"fmt"
	"net/http"
)

// Problem is an RFC 9457 problem detail: the body of every error answer,
// sent as application/problem+json.
type Problem struct {
	// Type names the class of the problem: one of the URIs of Problems.
	Type string `json:"type" doc:"The problem's class: one of the type URIs listed in docs/api.md; stable across releases."`
	// Title is the class's short summary; it does not vary.
	Title string `json:"title" doc:"A short summary of the class."`
	// Status repeats the HTTP status code.
	Status int `json:"status" doc:"The HTTP status code."`
	// Detail explains this occurrence.
	Detail string `json:"detail,omitempty" doc:"What went wrong this time."`
	// Errors name each refused field, for invalid input.
	Errors []FieldError `json:"errors,omitempty" doc:"Each refused field, for invalid input."`
}

// FieldError is one refused part of a request.
type FieldError struct {
	// Location is where the refused value is: body.input, path.id,
	// query.limit, header.Last-Event-ID.
	Location string `json:"location,omitempty" doc:"Where the value is: body.FIELD, path.NAME, query.NAME or header.NAME."`
	// Message says why it was refused. It never repeats the refused value:
	// an answer holds nothing the caller sent.
	Message string `json:"message" doc:"Why it was refused; it never repeats the refused value."`
}

// Error makes a Problem an error.
func (p *Problem) Error() string {
	if p.Detail != "" {
		return p.Detail
	}
	return p.Title
}

// GetStatus returns the HTTP status to answer with.
func (p *Problem) GetStatus() int { return p.Status }

// ContentType answers JSON problems as application/problem+json.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return ProblemContentType
	}
	return ct
}

// ProblemContentType is the media type of an error answer.
const ProblemContentType = "application/problem+json"

// Class is one class of error: its type URI, HTTP status, title, and the
// exit code the hitch command gives for the same refusal.
type Class struct {
	Type   string
	Status int
	Title  string
	// Exit is the hitch command's exit code for this class (docs/cli.md).
	Exit int
}

// The problem types. Each is a URI reference relative to the API's root;
// docs/api.md lists them. They never change meaning.
const (
	TypeInvalid         = "/v1/problems/invalid"
	TypeUnauthorized    = "/v1/problems/unauthorized"
	TypeForbidden       = "/v1/problems/forbidden"
	TypeNotFound        = "/v1/problems/not-found"
	TypeConflict        = "/v1/problems/conflict"
	TypeEnded           = "/v1/problems/ended"
	TypeBusy            = "/v1/problems/runner-busy"
	TypeRefused         = "/v1/problems/refused"
	TypeBadCredential   = "/v1/problems/bad-credential"
	TypeExpired         = "/v1/problems/approval-expired"
	TypeTooManyStreams  = "/v1/problems/too-many-streams"
	TypeTooLarge        = "/v1/problems/too-large"
	TypeHeaderTooLarge  = "/v1/problems/header-too-large"
	TypeMethod          = "/v1/problems/method-not-allowed"
	TypeUnavailable     = "/v1/problems/unavailable"
	TypeInternal        = "/v1/problems/internal"
	TypeUnsupportedType = "/v1/problems/unsupported-media-type"
	TypeTimeout         = "/v1/problems/timeout"
	TypeBehind          = "/v1/problems/stream-behind"
)

// Problems is the one table of error classes, by type. Every error the
// server sends has one of these types, with its status and title.
var Problems = []Class{
	{TypeInvalid, http.StatusUnprocessableEntity, "invalid input", 2},
	{TypeUnauthorized, http.StatusUnauthorized, "no valid bearer token", 2},
	{TypeForbidden, http.StatusForbidden, "the token's role may not do this", 5},
	{TypeNotFound, http.StatusNotFound, "no such resource", 6},
	{TypeConflict, http.StatusConflict, "conflicts with what exists", 5},
	{TypeEnded, http.StatusConflict, "the run has ended", 5},
	{TypeBusy, http.StatusConflict, "the run's runner is busy; try again", 5},
	{TypeRefused, http.StatusConflict, "refused in the resource's present state", 5},
	{TypeBadCredential, http.StatusForbidden, "the approver credential was refused", 5},
	{TypeExpired, http.StatusGone, "the approval request has expired", 5},
	{TypeTooManyStreams, http.StatusTooManyRequests, "too many open streams for this token", 5},
	{TypeTooLarge, http.StatusRequestEntityTooLarge, "the request is too large", 2},
	{TypeHeaderTooLarge, http.StatusRequestHeaderFieldsTooLarge, "the request's header is too large", 2},
	{TypeMethod, http.StatusMethodNotAllowed, "method not allowed", 2},
	{TypeUnsupportedType, http.StatusUnsupportedMediaType, "unsupported media type", 2},
	{TypeTimeout, http.StatusServiceUnavailable, "the request took too long", 1},
	{TypeUnavailable, http.StatusServiceUnavailable, "the server is stopping or not ready", 1},
	{TypeBehind, http.StatusServiceUnavailable, "the event stream's reader fell behind; resume from its last event id", 1},
	{TypeInternal, http.StatusInternalServerError, "internal error", 1},
}

// ClassOf returns the class of a type URI.
func ClassOf(typ string) (Class, bool) {
	for _, c := range Problems {
		if c.Type == typ {
			return c, true
		}
	}
	return Class{}, false
}

// ClassForStatus returns the class a bare HTTP status stands for, for the
// errors a framework raises by status alone (a malformed body, an unknown
// route): the first class of the table with that status, else internal.
func ClassForStatus(status int) Class {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return mustClass(TypeInvalid)
	}
	for _, c := range Problems {
		if c.Status == status {
			return c
		}
	}
	return mustClass(TypeInternal)
}

func mustClass(typ string) Class {
	c, ok := ClassOf(typ)
	if !ok {
		panic(fmt.Sprintf("api: no problem class %s", typ))
	}
	return c
}

// NewProblem returns a problem of the class typ with a detail.
func NewProblem(typ, detail string) *Problem {
	c := mustClass(typ)
	return &Problem{Type: c.Type, Title: c.Title, Status: c.Status, Detail: detail}
}
