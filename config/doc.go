// Package config loads hitch's YAML configuration: the models, the agents
// built on them (tools, policy, limits, workspace) and the default store.
//
// Every problem is reported at once, each naming the file, the line and the
// field, so a user can fix a file in one pass. Keys are read strictly: an
// unknown key is an error, not a silent no-op. API keys are never in the
// file: a model names the environment variable that holds its key.
package config
