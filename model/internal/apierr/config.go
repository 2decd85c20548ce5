package apierr

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CheckConfig checks what every provider's config needs: a model id and an
// absolute http or https base URL (base, or def when base is empty). It
// returns the parsed URL and the base in force.
func CheckConfig(provider, model, base, def string) (*url.URL, string, error) {
	if strings.TrimSpace(model) == "" {
		return nil, "", errors.New(provider + " config: Model is required")
	}
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("%s config: BaseURL %q is not an http or https URL", provider, base)
	}
	return u, base, nil
}

// Client returns c, or a client of its own on a clone of the default
// transport, so a provider's connection settings never leak into others.
func Client(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}
