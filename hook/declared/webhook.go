package declared

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Headers of a webhook delivery.
const (
	// HeaderSignature carries "sha256=" and the hex HMAC-SHA256, keyed by
	// the hook's secret, of the timestamp, a '.', and the body.
	HeaderSignature = "X-Hitch-Signature"
	// HeaderTimestamp is when the delivery was signed, in Unix seconds; a
	// receiver refuses old ones so a captured request cannot be replayed.
	HeaderTimestamp = "X-Hitch-Timestamp"
	// HeaderDelivery names the delivery; a retry carries the same one.
	HeaderDelivery = "X-Hitch-Delivery"
	// HeaderHook names the hook.
	HeaderHook = "X-Hitch-Hook"
)

// Webhook is a hook that POSTs the event as JSON to a URL, signed with a
// secret, and reads its answer from a 2xx response's body. At a retried
// point (Point.Retried) a transport error, a 429 or a 5xx is tried again,
// up to WebhookAttempts in all; any other answer is final.
type Webhook struct {
	URL string
	// Secret keys the signature; the receiver holds the same.
	Secret []byte
	// Client sends the requests; default one that follows no redirect.
	Client *http.Client
}

// describe names the URL without a password or a query, which may hold
// credentials.
func (w *Webhook) describe() (string, string) {
	u, err := url.Parse(w.URL)
	if err != nil {
		return "webhook", ""
	}
	u.RawQuery, u.Fragment = "", ""
	return "webhook", u.Redacted()
}

// Sign returns the signature header's value for body sent at ts.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

var defaultClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func (w *Webhook) call(ctx context.Context, h *Hook, event []byte) (Answer, error) {
	attempts := 1
	if h.Point.Retried() {
		attempts = WebhookAttempts
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	delivery := hex.EncodeToString(id)
	wait := WebhookRetryDelay
	var last error
	for i := range attempts {
		if i > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return Answer{}, fmt.Errorf("%w (after: %v)", context.Cause(ctx), last)
			case <-t.C:
			}
			wait *= 2
		}
		a, retry, err := w.attempt(ctx, h, delivery, event)
		if err == nil {
			return a, nil
		}
		last = err
		if !retry || ctx.Err() != nil {
			break
		}
	}
	if attempts > 1 {
		return Answer{}, fmt.Errorf("%w (%d attempts)", last, attempts)
	}
	return Answer{}, last
}

// attempt makes one delivery; retry says a failure may be tried again.
func (w *Webhook) attempt(ctx context.Context, h *Hook, delivery string, body []byte) (a Answer, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{}, false, err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(w.Secret, ts, body))
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderHook, h.Name)
	client := w.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Answer{}, true, fmt.Errorf("gave no answer within %s", h.timeout())
		}
		return Answer{}, true, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput+1))
	if err != nil {
		return Answer{}, true, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := strings.TrimSpace(string(b[:min(len(b), maxStderr)]))
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if msg != "" {
			return Answer{}, retry, fmt.Errorf("answered %s: %s", resp.Status, msg)
		}
		return Answer{}, retry, fmt.Errorf("answered %s", resp.Status)
	}
	if len(b) > MaxOutput {
		return Answer{}, false, fmt.Errorf("answered more than %d bytes", MaxOutput)
	}
	a, err = decodeAnswer(b)
	return a, false, err
}
