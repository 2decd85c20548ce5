package web

import (
	"net/http"

	"github.com/hitch-dev/hitch/api"
)

// doctorPage shows the checks of the server's deployment (GET /v1/doctor),
// to an admin of tenant default; the API refuses anyone else.
func (c *Console) doctorPage(w http.ResponseWriter, r *http.Request) {
	var rep api.DoctorReport
	if res := c.get(r, "/v1/doctor", &rep); !res.ok() {
		c.refused(w, r, res)
		return
	}
	c.render(w, r, http.StatusOK, "doctor", page{Title: "Doctor", Nav: "doctor", Data: rep})
}
