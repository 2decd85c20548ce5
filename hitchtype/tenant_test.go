package hitchtype

import (
	"strings"
	"testing"
)

func TestCheckTenant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		wantErr string
	}{
		{"default", ""},
		{"a", ""},
		{"7", ""},
		{"acme_corp-eu1", ""},
		{strings.Repeat("a", 64), ""},
		{"", "empty"},
		{strings.Repeat("a", 65), "more than 64"},
		{"-acme", "starts with"},
		{"_acme", "starts with"},
		{"Acme", "at byte 0"},
		{"ac me", "at byte 2"},
		{"acmé", "at byte 3"},
		{"a/b", "at byte 1"},
	} {
		err := CheckTenant(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("CheckTenant(%q) = %v, want nil", tc.in, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("CheckTenant(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
		}
	}
}
