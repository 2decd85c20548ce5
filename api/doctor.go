package api

// DoctorReport answers GET /v1/doctor: the checks of the server's
// deployment (docs/operations.md).
type DoctorReport struct {
	Verdict string        `json:"verdict" enum:"ok,warning,failure" doc:"The worst verdict of the checks."`
	Checks  []DoctorCheck `json:"checks" nullable:"false" doc:"One for each finding, in a fixed order."`
}

// DoctorCheck is one finding of the doctor.
type DoctorCheck struct {
	Name    string `json:"name" doc:"What was checked: store, schema, durability, commits, clock, nodes, disk, sandbox, secrets, mcp NAME or model NAME."`
	Verdict string `json:"verdict" enum:"ok,warning,failure" doc:"ok: nothing to do; warning: a promise may not hold here; failure: hitch cannot work as configured."`
	Detail  string `json:"detail" doc:"What was found. Never a secret's value."`
	Fix     string `json:"fix,omitempty" doc:"What to do, when the verdict is not ok."`
}
