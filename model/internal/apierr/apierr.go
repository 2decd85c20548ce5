package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hitch-dev/hitch/model"
)

const (
	// maxBody bounds how much of an error body is read; provider error
	// bodies are small, and a proxy's HTML page need not be read whole.
	maxBody = 64 << 10
	// maxMessage bounds the provider message kept in an Error.
	maxMessage = 2000
	redacted   = "[redacted]"
)

// Scrubber removes secret values from texts that may echo them.
type Scrubber []string

// Scrub replaces every occurrence of a secret in s.
func (sc Scrubber) Scrub(s string) string {
	for _, secret := range sc {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	return s
}

// scrubbed stands in for an underlying error whose text may hold a secret:
// it keeps the scrubbed text and hides the original from errors.As, whose
// Error method would print it.
type scrubbed struct{ msg string }

func (e *scrubbed) Error() string { return e.msg }

// Hide returns an error with err's text, scrubbed, and nothing else. Context
// errors are returned as they are: they hold no secret and callers test for
// them with errors.Is.
func (sc Scrubber) Hide(err error) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	return &scrubbed{msg: sc.Scrub(err.Error())}
}

// KindOfStatus classifies an HTTP status.
func KindOfStatus(status int) model.Kind {
	switch {
	case status == http.StatusTooManyRequests:
		return model.KindRateLimited
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusPaymentRequired:
		return model.KindUnauthorized
	case status == http.StatusRequestTimeout:
		return model.KindTimedOut
	case status == http.StatusConflict:
		// A conflict is transient on the providers that use it.
		return model.KindOverloaded
	case status >= 500:
		// 529 (Anthropic's "overloaded") falls in here too.
		return model.KindOverloaded
	}
	return model.KindInvalidRequest
}

// KindOfErrorType classifies the type or code a provider puts in an error
// object, for errors that arrive inside a stream whose HTTP status was 200.
// An unknown type counts as overloaded: a failure in mid-answer is the
// provider's trouble, and trying again is the useful answer.
func KindOfErrorType(typ, code string) model.Kind {
	s := strings.ToLower(typ + " " + code)
	switch {
	case strings.Contains(s, "insufficient_quota"), strings.Contains(s, "billing"),
		strings.Contains(s, "authentication"), strings.Contains(s, "permission"),
		strings.Contains(s, "invalid_api_key"):
		return model.KindUnauthorized
	case strings.Contains(s, "rate_limit"):
		return model.KindRateLimited
	case strings.Contains(s, "timeout"):
		return model.KindTimedOut
	case strings.Contains(s, "invalid_request"), strings.Contains(s, "not_found"),
		strings.Contains(s, "invalid_prompt"), strings.Contains(s, "context_length"):
		return model.KindInvalidRequest
	}
	return model.KindOverloaded
}

// RetryAfter reads a provider's requested pause: retry-after-ms (OpenAI),
// then retry-after in seconds or as an HTTP date. It returns 0 when there is
// none or it cannot be read.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Body is what an error body says, in whichever of the common shapes it
// came.
type Body struct {
	Message string
	Type    string
	Code    string
}

// ParseBody reads the message, type and code of an error body. It knows
// OpenAI's and Anthropic's {"error":{...}}, the {"error":"text"} of Ollama
// and llama.cpp, and the {"detail":...} or {"message":...} of other servers;
// anything else is kept as text.
func ParseBody(body []byte) Body {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return Body{Message: strings.TrimSpace(string(body))}
	}
	var out Body
	if raw, ok := top["error"]; ok {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			out.Message = text(obj["message"])
			out.Type = text(obj["type"])
			out.Code = text(obj["code"])
		} else {
			out.Message = text(raw)
		}
	}
	if out.Message == "" {
		out.Message = text(top["message"])
	}
	if out.Message == "" {
		out.Message = text(top["detail"])
	}
	if out.Type == "" {
		out.Type = text(top["type"])
	}
	if out.Message == "" {
		out.Message = strings.TrimSpace(string(body))
	}
	return out
}

// text renders a JSON value as plain text: strings unquoted, anything else
// as its JSON.
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// Truncate bounds a message, cutting at a rune boundary.
func Truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// FromResponse builds the error for a response whose status is 400 or more.
// It reads at most 64 KiB of the body and closes it.
func FromResponse(provider string, res *http.Response, sc Scrubber, now time.Time) *model.Error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxBody))
	_ = res.Body.Close()
	b := ParseBody(body)
	kind := KindOfStatus(res.StatusCode)
	if kind == model.KindRateLimited && KindOfErrorType(b.Type, b.Code) == model.KindUnauthorized {
		// OpenAI answers an exhausted quota with a 429; waiting will not help.
		kind = model.KindUnauthorized
	}
	e := &model.Error{
		Kind:     kind,
		Provider: provider,
		Status:   res.StatusCode,
		Message:  Truncate(sc.Scrub(b.Message)),
	}
	if kind == model.KindRateLimited || kind == model.KindOverloaded {
		e.RetryAfter = RetryAfter(res.Header, now)
	}
	return e
}

// Middleware returns an SDK middleware that turns every response with a
// status of 400 or more into a *model.Error, so that both SDKs report
// refusals the same way, whatever the body looks like.
func Middleware(provider string, sc Scrubber) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res == nil || res.StatusCode < 400 {
			return res, err
		}
		return nil, FromResponse(provider, res, sc, time.Now())
	}
}

// Transport classifies an error met while sending a request or reading its
// stream. The context decides first: a cancelled call is cancelled, whatever
// the transport made of it.
func Transport(ctx context.Context, provider string, err error, sc Scrubber) *model.Error {
	switch ctx.Err() {
	case context.Canceled:
		return &model.Error{Kind: model.KindCancelled, Provider: provider, Message: "call cancelled", Err: context.Canceled}
	case context.DeadlineExceeded:
		return &model.Error{Kind: model.KindTimedOut, Provider: provider, Message: "call deadline exceeded", Err: context.DeadlineExceeded}
	}
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	e := &model.Error{Kind: model.KindUnreachable, Provider: provider, Message: Truncate(sc.Scrub(err.Error())), Err: sc.Hide(err)}
	var ne net.Error
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		e.Kind = model.KindTimedOut
	case errors.Is(err, context.Canceled):
		e.Kind = model.KindCancelled
	case errors.As(err, &syn), errors.As(err, &typ):
		e.Kind = model.KindMalformed
	}
	return e
}

// Cut is the error for a stream that ended before the provider said it was
// complete: the connection was lost, so trying again may work.
func Cut(provider string) *model.Error {
	return &model.Error{Kind: model.KindUnreachable, Provider: provider, Message: "stream ended before the reply was complete"}
}

// Malformed is the error for an answer that could not be understood.
func Malformed(provider, msg string) *model.Error {
	return &model.Error{Kind: model.KindMalformed, Provider: provider, Message: msg}
}

// MaxReplyBytes bounds the text and tool arguments gathered from one stream.
const MaxReplyBytes = 32 << 20
