package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/tool/mcp"
)

func checkSandbox(s Sandbox) Check {
	bwrap, err := local.CheckBwrapIn(s.BwrapDirs)
	if err == nil {
		var reads []string
		for _, d := range local.SystemDirs() {
			if _, err := os.Stat(d); err == nil {
				reads = append(reads, d)
			}
		}
		reads = append(reads, "the run's workspace")
		reads = append(reads, s.ReadPaths...)
		return Check{Name: "sandbox", Verdict: OK, Detail: fmt.Sprintf("commands run in bwrap (%s) and read only %s; other users' secrets under /etc are hidden",
			bwrap, strings.Join(reads, ", "))}
	}
	who := "this user"
	if u, uerr := user.Current(); uerr == nil {
		who = "user " + u.Username
	}
	if s.RequireIsolation {
		return Check{Name: "sandbox", Verdict: Failure,
			Detail: fmt.Sprintf("bwrap is not usable (%v), and isolation is required: every command is refused", err),
			Fix:    "install bubblewrap and allow unprivileged user namespaces (kernel.unprivileged_userns_clone=1; in a container, run it with user namespaces allowed)"}
	}
	return Check{Name: "sandbox", Verdict: Warning,
		Detail: fmt.Sprintf("bwrap is not usable (%v): commands run unconfined and read whatever %s can, home directory included", err, who),
		Fix:    "install bubblewrap and allow unprivileged user namespaces, or set sandbox.require_isolation: true to refuse commands rather than run them unconfined"}
}

func checkSecrets(ss []Secret) Check {
	if len(ss) == 0 {
		return Check{Name: "secrets", Verdict: OK, Detail: "none declared"}
	}
	var ok, missing []string
	for _, s := range ss {
		if s.Missing == "" {
			ok = append(ok, s.Name)
		} else {
			missing = append(missing, s.Name+": "+s.Missing)
		}
	}
	c := Check{Name: "secrets", Verdict: OK, Detail: fmt.Sprintf("%d of %d resolve (values not shown)", len(ok), len(ss))}
	if len(missing) > 0 {
		c.Verdict = Warning
		c.Detail += "; unresolved: " + strings.Join(missing, "; ")
		c.Fix = "set the variables named, or give the files, before the node starts"
	}
	return c
}

func checkMCP(ctx context.Context, cfg Config, s mcp.Server) Check {
	name := "mcp " + s.Name
	d := max(cfg.Timeout, s.ConnectTimeout)
	cl, err := within(ctx, d, func(ctx context.Context) (*mcp.Client, error) { return mcp.Connect(ctx, s) })
	if err != nil {
		where := s.URL
		if where == "" {
			where = s.Command
		}
		return Check{Name: name, Verdict: Failure, Detail: fmt.Sprintf("MCP server %s (%s) is unreachable: %v", s.Name, where, err),
			Fix: "start the server or fix its command or URL in the config's mcp section; agents that name its tools cannot run without it"}
	}
	n := len(cl.Tools())
	lerr := cl.ListErr()
	if cerr := cl.Close(); cerr != nil {
		lerr = errors.Join(lerr, cerr)
	}
	c := Check{Name: name, Verdict: OK, Detail: fmt.Sprintf("MCP server %s answers with %d tools", s.Name, n)}
	if lerr != nil {
		c.Verdict, c.Detail = Warning, c.Detail+": "+lerr.Error()
		c.Fix = "see the server's own log"
	}
	return c
}

func checkModel(ctx context.Context, cfg Config, m Model) Check {
	name := "model " + m.Name
	if m.KeyVar != "" && !m.KeySet {
		return Check{Name: name, Verdict: Failure, Detail: m.KeyVar + " is not set: runs of the agents on this model fail at their first call",
			Fix: "export " + m.KeyVar + " in the node's environment"}
	}
	have := "needs no key"
	if m.KeyVar != "" {
		have = m.KeyVar + " is set"
	}
	if !cfg.Network || m.Model == nil {
		return Check{Name: name, Verdict: OK, Detail: have + " (not called: pass --network to call it)"}
	}
	_, err := within(ctx, cfg.Timeout, func(ctx context.Context) (struct{}, error) { return struct{}{}, model.Check(ctx, m.Model) })
	if err != nil {
		return Check{Name: name, Verdict: Failure, Detail: have + ", but a call failed: " + err.Error(),
			Fix: "check the key, the model's name and its base_url; hitch models check calls each model the same way"}
	}
	return Check{Name: name, Verdict: OK, Detail: have + "; it answered a call"}
}
