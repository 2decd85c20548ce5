package apierr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		ms, s string
		want  time.Duration
	}{
		{"", "", 0},
		{"", "3", 3 * time.Second},
		{"", "0.5", 500 * time.Millisecond},
		{"250", "3", 250 * time.Millisecond},
		{"250.5", "", 250500 * time.Microsecond},
		{"garbage", "2", 2 * time.Second},
		{"", "-4", 0},
		{"", "0", 0},
		{"", "1e30", 0},
		{"", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"", "tomorrow", 0},
	} {
		h := http.Header{}
		if tc.ms != "" {
			h.Set("retry-after-ms", tc.ms)
		}
		if tc.s != "" {
			h.Set("retry-after", tc.s)
		}
		if got := RetryAfter(h, now); got != tc.want {
			t.Errorf("retry-after-ms %q retry-after %q: %v, want %v", tc.ms, tc.s, got, tc.want)
		}
	}
}

func TestKindOfStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]model.Kind{
		400: model.KindInvalidRequest, 404: model.KindInvalidRequest, 422: model.KindInvalidRequest, 413: model.KindInvalidRequest,
		401: model.KindUnauthorized, 403: model.KindUnauthorized, 402: model.KindUnauthorized,
		408: model.KindTimedOut, 409: model.KindOverloaded, 429: model.KindRateLimited,
		500: model.KindOverloaded, 502: model.KindOverloaded, 503: model.KindOverloaded, 529: model.KindOverloaded,
	} {
		if got := KindOfStatus(status); got != want {
			t.Errorf("status %d: %s, want %s", status, got, want)
		}
	}
}

func TestParseBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want Body
	}{
		{`{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"x"}}`, Body{"bad", "invalid_request_error", "x"}},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Body{"Overloaded", "overloaded_error", ""}},
		{`{"error":"model not found"}`, Body{Message: "model not found"}},
		{`{"error":{"message":"m","code":429}}`, Body{Message: "m", Code: "429"}},
		{`{"detail":"Not Found"}`, Body{Message: "Not Found"}},
		{`{"detail":[{"loc":["body"],"msg":"field required"}]}`, Body{Message: `[{"loc":["body"],"msg":"field required"}]`}},
		{`{"message":"upstream"}`, Body{Message: "upstream"}},
		{"<html>Bad Gateway</html>\n", Body{Message: "<html>Bad Gateway</html>"}},
		{``, Body{}},
	} {
		if got := ParseBody([]byte(tc.body)); got != tc.want {
			t.Errorf("ParseBody(%s) = %+v, want %+v", tc.body, got, tc.want)
		}
	}
}

func TestFromResponseBoundsAndScrubs(t *testing.T) {
	t.Parallel()
	const key = "sk-secret-123456"
	body := `{"error":{"message":"key ` + key + ` ` + strings.Repeat("é", 5000) + `"}}`
	res := &http.Response{StatusCode: 401, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
	e := FromResponse("p", res, Scrubber{key}, time.Now())
	if e.Kind != model.KindUnauthorized || strings.Contains(e.Message, key) || len(e.Message) > maxMessage+len("…") || !strings.HasPrefix(e.Message, "key [redacted]") {
		t.Errorf("error %q (%d bytes)", e.Message[:40], len(e.Message))
	}
	if !strings.HasSuffix(e.Message, "…") || strings.ContainsRune(e.Message, '\uFFFD') {
		t.Errorf("message not cut at a rune boundary")
	}
}

func TestTransport(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	bg := context.Background()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want model.Kind
	}{
		{cancelled, errors.New("read: connection reset"), model.KindCancelled},
		{expired, errors.New("read: connection reset"), model.KindTimedOut},
		{bg, fmt.Errorf("post: %w", context.DeadlineExceeded), model.KindTimedOut},
		{bg, errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), model.KindUnreachable},
		{bg, io.ErrUnexpectedEOF, model.KindUnreachable},
		{bg, &model.Error{Kind: model.KindRateLimited}, model.KindRateLimited},
	} {
		if got := Transport(tc.ctx, "p", tc.err, nil); got.Kind != tc.want {
			t.Errorf("Transport(%v) = %s, want %s", tc.err, got.Kind, tc.want)
		}
	}
	e := Transport(bg, "p", errors.New(`Post "http://h/v1?key=sk-abc": refused`), Scrubber{"sk-abc"})
	if strings.Contains(e.Error(), "sk-abc") || strings.Contains(e.Err.Error(), "sk-abc") {
		t.Errorf("secret in %v / %v", e, e.Err)
	}
}
