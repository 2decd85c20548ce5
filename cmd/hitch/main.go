// Command hitch runs durable LLM agents: an offline demo, runs from a YAML
// config, and the commands that inspect, cancel, reconcile and recover them.
// See docs/cli.md for every command and the exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/store/sqlite"
)

// Exit codes; docs/cli.md lists them.
const (
	exitOK       = 0 // the command did what was asked; a run completed
	exitError    = 1 // something went wrong: store, I/O, an internal error
	exitUsage    = 2 // bad flags, arguments or configuration file
	exitWaiting  = 3 // the run is parked, waiting (reconcile, approval)
	exitNotDone  = 4 // the run ended but did not complete (failed, cancelled, ...)
	exitRefused  = 5 // a command was refused (runner busy, not uncertain, ...)
	exitNotFound = 6 // no such run
	exitNoAnswer = 7 // the run completed without an answer (stop reason max_turns)
	exitCorrupt  = 8 // the store is damaged: restore it from a backup
	// exitViolation: hitch chaos found a promise broken.
	exitViolation = 9
	// exitDiffers: a replay decided otherwise than its recording.
	exitDiffers = 10
)

// exitError carries an exit code out of a command.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codeError{code: code, err: err}
}

// silentExit ends the process with a code and no message (the command has
// already said what happened).
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func main() {
	floorGC(os.Getenv)
	spareProc(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	red := &redaction{}
	errT := &terminal{w: stderr, red: red}
	outT := &terminal{w: stdout, red: red}
	jsonOut := &redactWriter{w: stdout, red: red}
	defer errT.flush()
	defer outT.flush()
	defer jsonOut.flush()
	root := newRoot(stdout, outT, errT, red, jsonOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var se silentExit
	if errors.As(err, &se) {
		return int(se)
	}
	fmt.Fprintln(errT, "hitch:", red.get().Error(err))
	if sqlite.IsCorrupt(err) {
		fmt.Fprintln(errT, "hitch: the store is damaged: stop every process that uses it, keep a copy, and restore it from a backup (docs/store-sqlite.md)")
	}
	return exitOf(err)
}

// usageError marks bad flags or arguments.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// globals are the flags every command shares.
type globals struct {
	stdout, stderr io.Writer
	raw            io.Writer // standard output unescaped, for protocols
	json           bool
	db             string
	config         string
	leaseTTL       time.Duration
	configSet      bool   // --config was given
	server         string // --server: talk to a hitch serve (remote.go)
	// red redacts every output once the config names its secrets;
	// jsonOut is standard output, exact but redacted, for --json.
	red     *redaction
	jsonOut io.Writer
	// logFormat and logLevel shape the log lines on standard error.
	logFormat, logLevelName string
	logLevel                slog.Level
	// requireIsolation is the sandbox's require_isolation when the config
	// does not set it: hitch serve sets it.
	requireIsolation bool
	// deferIsolation loads the config without finding out whether its
	// commands can be isolated: a command that only queues a run (run
	// --detach) runs none (config.Options.DeferIsolation).
	deferIsolation bool
	// metrics is what a node command asks of hitch's own metrics
	// (metrics.go).
	metrics nodeMetrics
	// maxRunners is --max-runners of a command that drives runs; 0 when
	// not given.
	maxRunners int
}

// newRoot builds the command tree. Human output goes through term, which
// escapes control characters; --json output goes to raw, exact.
func newRoot(raw, term, stderr io.Writer, red *redaction, jsonOut io.Writer) *cobra.Command {
	g := &globals{stdout: term, stderr: stderr, raw: raw, red: red, jsonOut: jsonOut}
	root := &cobra.Command{
		Use:           "hitch",
		Short:         "A durable runtime for LLM agents",
		Long:          "hitch runs LLM agents as durable runs: every model reply and tool effect is journaled before the next step, so runs survive crashes and never silently repeat a side effect.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(term)
	root.SetErr(stderr)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if g.json {
			g.stdout = jsonOut
		}
		g.configSet = cmd.Flags().Changed("config")
		if err := checkGlobals(g); err != nil {
			return err
		}
		if g.server != "" {
			return refuseRemote(cmd)
		}
		return nil
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.BoolVar(&g.json, "json", false, "print JSON instead of text")
	pf.StringVar(&g.db, "db", "", "SQLite file with the runs (default: the config's store, or hitch.db)")
	pf.StringVarP(&g.config, "config", "c", "hitch.yaml", "configuration file")
	pf.StringVar(&g.server, "server", os.Getenv(serverEnv), "talk to the hitch serve at this URL instead of opening the store ($HITCH_SERVER; token in $HITCH_TOKEN)")
	pf.StringVar(&g.logFormat, "log-format", "text", "log lines on standard error: text or json")
	pf.StringVar(&g.logLevelName, "log-level", "warn", "least level logged: debug, info, warn or error")
	pf.DurationVar(&g.leaseTTL, "lease-ttl", 30*time.Second, "how long a run's lease outlives its process (renewed every third)")
	root.AddCommand(
		newRun(g), newRuns(g), newReconcile(g), newCancel(g), newApprovals(g), newWorkspace(g),
		newSessions(g), newChat(g), newWake(g), newCalls(g), newTriggers(g), newModels(g), newAgents(g), newVersion(g),
		newDoctor(g),
		// These need the store or the agents in this process.
		localOnly(newDemo(g), "it runs its own offline store"),
		localOnly(newMigrate(g), "it migrates a store this machine opens"),
		localOnly(newWorker(g), "a worker is a node: it opens the store"),
		localOnly(newRecover(g), "it drives runs from the store"),
		localOnly(newBench(g), "it measures the store on this machine"),
		localOnly(newChaos(g), "it starts and kills workers on this machine"),
		localOnly(newServe(g), "it is the server"),
		localOnly(newMCP(g, os.Stdin), "it serves the config's agents itself"),
		localOnly(newPrune(g), "it deletes from the store this machine opens"),
		localOnly(newReplay(g), "it replays on the config's agent versions"),
	)
	groupsRefuseUnknown(root)
	return root
}

// args checks positional arguments and reports misuse as a usage error.
func args(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			return usageError{fmt.Errorf("%s wants %s", cmd.CommandPath(), names)}
		}
		return nil
	}
}
