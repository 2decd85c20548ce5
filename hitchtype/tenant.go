package hitchtype

import "fmt"

// DefaultTenant is the tenant of runs and sessions that name none, and of
// every row written before tenants existed.
const DefaultTenant = "default"

// MaxTenantBytes bounds a tenant's name.
const MaxTenantBytes = 64

// CheckTenant refuses a tenant name that is not 1 to 64 characters of
// a-z, 0-9, '_' and '-', starting with a letter or a digit. The error says
// what is wrong and where.
func CheckTenant(t string) error {
	switch {
	case t == "":
		return fmt.Errorf("tenant is empty")
	case len(t) > MaxTenantBytes:
		return fmt.Errorf("tenant is %d bytes long, more than %d", len(t), MaxTenantBytes)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		case c == '_' || c == '-':
			return fmt.Errorf("tenant %q starts with %q; it must start with a-z or 0-9", t, c)
		default:
			return fmt.Errorf("tenant %q has %q at byte %d; only a-z, 0-9, '_' and '-' are allowed", t, c, i)
		}
	}
	return nil
}
