// Package openai connects hitch to OpenAI and to every server that speaks
// OpenAI's HTTP API: Ollama, vLLM, llama.cpp's server, LM Studio and the
// hosted gateways that copy it.
//
// Two wire protocols are supported and chosen by Config.API. "chat" is the
// Chat Completions API, the one compatible servers implement; "responses" is
// OpenAI's newer Responses API. Both stream: text deltas are yielded as they
// arrive and the final chunk carries the whole reply. The SDK's own retries
// are off, so every HTTP attempt is one attempt the engine counted; failures
// come back as *model.Error with a Kind the engine's retry policy reads, and
// the API key is scrubbed from every message before it is built.
package openai
