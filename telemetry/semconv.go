package telemetry

import "go.opentelemetry.io/otel/attribute"

// The OpenTelemetry GenAI semantic conventions, named here once. Go's
// semconv packages stopped carrying the gen_ai.* names after v1.41.0; these
// follow the GenAI conventions as published (agent, model and tool spans,
// client metrics).
const (
	attrOperation      = attribute.Key("gen_ai.operation.name")
	attrProvider       = attribute.Key("gen_ai.provider.name")
	attrRequestModel   = attribute.Key("gen_ai.request.model")
	attrResponseModel  = attribute.Key("gen_ai.response.model")
	attrFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	attrInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	attrAgentName      = attribute.Key("gen_ai.agent.name")
	attrAgentID        = attribute.Key("gen_ai.agent.id")
	attrConversationID = attribute.Key("gen_ai.conversation.id")
	attrToolName       = attribute.Key("gen_ai.tool.name")
	attrToolCallID     = attribute.Key("gen_ai.tool.call.id")
	attrTokenType      = attribute.Key("gen_ai.token.type")
	attrErrorType      = attribute.Key("error.type")

	opInvokeAgent = "invoke_agent"
	opChat        = "chat"
	opExecuteTool = "execute_tool"

	metricTokenUsage = "gen_ai.client.token.usage"
	metricDuration   = "gen_ai.client.operation.duration"
)

// hitch's own attributes.
const (
	attrRunID   = attribute.Key("hitch.run.id")
	attrRootID  = attribute.Key("hitch.root.id")
	attrAttempt = attribute.Key("hitch.model.attempt")
	attrTurn    = attribute.Key("hitch.turn")
	attrStatus  = attribute.Key("hitch.run.status")
	// attrRoute and attrRouteModel name a route and one of its models.
	attrRoute      = attribute.Key("hitch.route")
	attrRouteModel = attribute.Key("hitch.route.model")
	attrReason     = attribute.Key("hitch.run.reason")
	attrVerdict    = attribute.Key("hitch.policy.verdict")
	attrOutcome    = attribute.Key("hitch.call.outcome")
	attrCostUSD    = attribute.Key("hitch.cost_usd")
	attrMessage    = attribute.Key("hitch.message")
	attrCallName   = attribute.Key("hitch.call.tool")
)
