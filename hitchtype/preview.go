package hitchtype

import "github.com/hitch-dev/hitch/model"

// The layers a part of a previewed request comes from, in the order a
// request lays them out.
const (
	// LayerAgent is the agent's instructions.
	LayerAgent = "agent_instructions"
	// LayerRun is the caller's instructions for the run, with the line
	// that marks them, laid over the agent's.
	LayerRun = "run_instructions"
	// LayerHook stands for instructions a pre-generate hook may add when
	// the run starts: a preview names the hook and runs none.
	LayerHook = "hook_instructions"
	// LayerHistory is a message of the session's transcript the run
	// starts from.
	LayerHistory = "session_history"
	// LayerSummary is the summary standing for older history.
	LayerSummary = "summary"
	// LayerInput is the run's input, the user message it answers.
	LayerInput = "input"
	// LayerTool is one tool's declaration: name, description, schema.
	LayerTool = "tool"
	// LayerAnswer is the typed answer's schema.
	LayerAnswer = "answer_schema"
)

// RequestPreview is the first model request a run of an agent would send,
// built by the code a runner builds it with, without calling the model
// or any hook.
type RequestPreview struct {
	Agent   string `json:"agent"`
	Version int    `json:"version"`
	// Model is the model the request would go to: the agent's, or the
	// first a route would pick now.
	Model string `json:"model"`
	// Request is the request as the model would receive it.
	Request model.Request `json:"request"`
	// Parts split the request by the layer each part comes from, in the
	// order the request holds them, each with its estimated tokens.
	Parts []PreviewPart `json:"parts"`
	// Context is the estimate against the model's window, as the run's
	// model.attempt entry would record it.
	Context ContextAccount `json:"context"`
	// Compacts says the estimate fills enough of the window that the run
	// would summarize older history before sending the request.
	Compacts bool `json:"compacts,omitempty"`
}

// PreviewPart is one part of a previewed request.
type PreviewPart struct {
	// Layer is one of the Layer constants.
	Layer string `json:"layer"`
	// Name names the part where a layer has several: a tool's name, a
	// message's role, a hook's name.
	Name string `json:"name,omitempty"`
	// Text is the part as sent (a tool's: its description).
	Text string `json:"text,omitempty"`
	// Tokens is the part's estimate, by EstimatorBytes.
	Tokens int64 `json:"tokens"`
}

// PreviewOptions say which run Preview shows the first request of.
type PreviewOptions struct {
	// Input is the user message the run would answer.
	Input string
	// Instructions are the caller's layer of instructions, as
	// hitch.WithInstructions gives a run.
	Instructions string
	// Session, when set, previews the session's next submission: the
	// session's transcript comes before Input. The session must be of
	// the agent (sessions.ErrAgent otherwise).
	Session string
}
