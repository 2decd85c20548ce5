package api

import "encoding/json"

// AgentDetail is an agent's definition as a client may see it: model,
// tools, policy, limits, budget and approvers. It never holds a secret:
// no model credentials or variables, no approver secrets.
type AgentDetail struct {
	Name         string `json:"name"`
	Version      int    `json:"version"`
	Description  string `json:"description,omitempty" doc:"What the agent does, as a parent agent's model is told."`
	Model        string `json:"model" doc:"The model's name, such as openai/gpt-4o-mini."`
	Instructions string `json:"instructions,omitempty" doc:"The agent's system instructions."`
	// Tools lists the agent's tools, then those its tool sources (MCP
	// servers) offer as of the request.
	Tools     []AgentTool `json:"tools" nullable:"false"`
	SubAgents []string    `json:"sub_agents" nullable:"false" doc:"The agents it may delegate to."`
	Policy    AgentPolicy `json:"policy"`
	Limits    AgentLimits `json:"limits" doc:"Each run's limits, defaults filled in."`
	Budget    *Budget     `json:"budget,omitempty" doc:"The family budget of a root run of this agent; absent when it has none."`
	// Approvers says who may answer the agent's approval requests.
	Approvers AgentApprovers  `json:"approvers"`
	Answer    json.RawMessage `json:"answer,omitempty" doc:"The JSON Schema of a typed final answer; absent when the answer is text."`
	Workspace bool            `json:"workspace" doc:"Each run gets its own sandbox for the file and shell tools."`
	Hooks     bool            `json:"hooks" doc:"Hooks watch and shape the agent's turns."`
	// HookList names the hooks in the order they run, when they list
	// themselves (a config's commands and webhooks do).
	HookList []AgentHook `json:"hook_list" nullable:"false"`
}

// AgentHook is one declared hook of an agent.
type AgentHook struct {
	Name     string   `json:"name"`
	Point    string   `json:"point" doc:"pre_generate, pre_tool, post_tool or post_turn."`
	Priority int      `json:"priority" doc:"A point's hooks run lowest first."`
	OnError  string   `json:"on_error" doc:"fail_closed or fail_open."`
	Kind     string   `json:"kind" doc:"command or webhook."`
	Target   string   `json:"target" doc:"The command line, or the URL without its query or password."`
	Match    []string `json:"match,omitempty" doc:"Globs over the tool names the hook sees."`
	When     string   `json:"when,omitempty" doc:"The CEL condition an event must meet."`
}

// AgentTool is one tool of an agent.
type AgentTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty" doc:"The JSON Schema of the arguments."`
	Replay      int             `json:"replay,omitempty" doc:"Above 0: the body may run again after a crash, up to this many attempts in all."`
	Timeout     string          `json:"timeout,omitempty" doc:"The tool's own bound (a Go duration, or infinite); absent: the agent's tool_timeout."`
	External    bool            `json:"external,omitempty" doc:"Another system does the work; a call waits for its result."`
	FromSource  bool            `json:"from_source,omitempty" doc:"Offered by a tool source (an MCP server): the list may change while runs go on."`
}

// AgentPolicy is what an agent's policy decides.
type AgentPolicy struct {
	Kind   string       `json:"kind" enum:"allow_all,deny_all,rules,go" doc:"allow_all, deny_all, an ordered list of rules, or a policy written in Go that does not describe itself."`
	Reason string       `json:"reason,omitempty" doc:"A deny_all policy's reason."`
	Rules  []PolicyRule `json:"rules,omitempty" doc:"The rules, in order: the first that matches decides; a call no rule matches is denied."`
}

// PolicyRule is one rule of a policy.
type PolicyRule struct {
	Name        string   `json:"name,omitempty"`
	Tools       []string `json:"tools" nullable:"false" doc:"Globs over tool names."`
	When        string   `json:"when,omitempty" doc:"A CEL condition that must hold for the rule to apply."`
	Verdict     string   `json:"verdict" enum:"allow,deny,approval"`
	Reason      string   `json:"reason,omitempty"`
	Requirement string   `json:"requirement,omitempty" doc:"For an approval: what an approver must be allowed to answer."`
}

// AgentApprovers says who may answer an agent's approval requests.
type AgentApprovers struct {
	Kind    string          `json:"kind" enum:"none,listed,go" doc:"none: the agent has none of its own (a sub-agent answers with its parent's); listed: see approvers; go: approvers written in Go that do not list themselves."`
	Members []AgentApprover `json:"members" nullable:"false"`
}

// AgentApprover is one approver: a name and what it may answer, never its
// secret.
type AgentApprover struct {
	Name         string   `json:"name"`
	Requirements []string `json:"requirements" nullable:"false" doc:"Globs over the requirements it may answer."`
}

// AgentLimits are an agent's run limits, named as in the config file;
// durations are Go durations ("5s") or "infinite".
type AgentLimits struct {
	ModelAttempts       int    `json:"model_attempts"`
	RetryDelay          string `json:"retry_delay"`
	MaxRetryAfter       string `json:"max_retry_after"`
	ModelTimeout        string `json:"model_timeout"`
	PolicyTimeout       string `json:"policy_timeout"`
	ToolTimeout         string `json:"tool_timeout"`
	ToolConcurrency     int    `json:"tool_concurrency"`
	MaxToolResult       int    `json:"max_tool_result" doc:"Bytes."`
	CommandWait         string `json:"command_wait"`
	ApprovalExpiry      string `json:"approval_expiry"`
	AnswerAttempts      int    `json:"answer_attempts"`
	MaxChildren         int    `json:"max_children"`
	MaxDepth            int    `json:"max_depth"`
	MaxTokens           int64  `json:"max_tokens" doc:"Input plus output tokens of one run; 0: no bound."`
	FinalTurn           bool   `json:"final_turn"`
	ContextWindow       int64  `json:"context_window" doc:"0: never compacts."`
	KeepTurns           int    `json:"keep_turns"`
	ContinueOnUncertain bool   `json:"continue_on_uncertain"`
	MaxWait             string `json:"max_wait"`
	PendingCallTimeout  string `json:"pending_call_timeout"`
}

// Budget is a family budget's limits; an absent counter is unlimited.
type Budget struct {
	Tokens     int64   `json:"tokens,omitempty" doc:"Input plus output tokens, as providers report them."`
	USD        float64 `json:"usd,omitempty" doc:"Cost at the model's list price."`
	ModelCalls int64   `json:"model_calls,omitempty" doc:"Model attempts, retries included."`
	ToolCalls  int64   `json:"tool_calls,omitempty" doc:"Tool bodies run and sub-agent starts."`
	WallTime   string  `json:"wall_time,omitempty" doc:"From the root run's start (a Go duration)."`
}
