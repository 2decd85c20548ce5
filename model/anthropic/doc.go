// Package anthropic connects hitch to Anthropic's Messages API, streaming.
//
// Instructions travel as the system prompt, tool results as tool_result
// blocks in user turns, and consecutive messages of one role are merged so
// that the transcript alternates as the API requires. A structured answer
// uses the API's native output format (output_config.format with a JSON
// schema) unless Config.AnswerTool asks for the older technique, a tool
// whose input is the answer, for models and gateways without it.
//
// Token counts are reported the way the rest of hitch counts them: input
// tokens include the ones read from or written to the prompt cache, and
// cached input tokens are the ones read from it. The SDK's retries are off;
// failures are *model.Error values whose messages never hold the API key.
package anthropic
