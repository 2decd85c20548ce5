package server

import "github.com/hitch-dev/hitch/hitchtype"

// Tenants are the runtime's (hitch.Scope): every handler reaches the
// runtime through the view of it that the request's principal may use, so
// a token sees only its tenant's runs and sessions, in its tenant's ids.

// defaultTenant is the tenant of the implicit local principal.
const defaultTenant = hitchtype.DefaultTenant
