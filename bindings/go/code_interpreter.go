package opensandbox

import (
	"context"
	"time"
)

// CodeInterpreterImage is the default image of CreateCodeInterpreter.
const CodeInterpreterImage = "opensandbox/code-interpreter:latest"

// DefaultCodeInterpreterTimeoutSeconds is the default TTL of a code interpreter.
const DefaultCodeInterpreterTimeoutSeconds = 900

// CodeInterpreterEntrypoint is the default entrypoint of CreateCodeInterpreter.
var CodeInterpreterEntrypoint = []string{"/opt/opensandbox/code-interpreter.sh"}

// CodeInterpreterCreateOptions configures CreateCodeInterpreter.
type CodeInterpreterCreateOptions struct {
	Image               string
	Entrypoint          []string
	ResourceLimits      ResourceLimits
	TimeoutSeconds      *int
	Env                 map[string]string
	Metadata            map[string]string
	SkipHealthCheck     bool
	ReadyTimeout        time.Duration
	HealthCheckInterval time.Duration
}

// CodeInterpreter is a Sandbox made for running code, with persistent contexts.
type CodeInterpreter struct {
	*Sandbox
}

// CreateCodeInterpreter creates a sandbox from the code-interpreter image (TTL 900 s
// unless set) and wraps it.
func CreateCodeInterpreter(ctx context.Context, config ConnectionConfig, opts CodeInterpreterCreateOptions) (*CodeInterpreter, error) {
	o := SandboxCreateOptions{
		Image: opts.Image, Entrypoint: opts.Entrypoint, ResourceLimits: opts.ResourceLimits,
		TimeoutSeconds: opts.TimeoutSeconds, Env: opts.Env, Metadata: opts.Metadata,
		SkipHealthCheck: opts.SkipHealthCheck, ReadyTimeout: opts.ReadyTimeout,
		HealthCheckInterval: opts.HealthCheckInterval,
	}
	if o.Image == "" {
		o.Image = CodeInterpreterImage
	}
	if len(o.Entrypoint) == 0 {
		o.Entrypoint = CodeInterpreterEntrypoint
	}
	if o.TimeoutSeconds == nil {
		t := DefaultCodeInterpreterTimeoutSeconds
		o.TimeoutSeconds = &t
	}
	sb, err := CreateSandbox(ctx, config, o)
	if err != nil {
		return nil, err
	}
	return &CodeInterpreter{Sandbox: sb}, nil
}

// Execute runs code in language ("" = the server default).
func (ci *CodeInterpreter) Execute(ctx context.Context, language, code string, handlers *ExecutionHandlers) (*Execution, error) {
	req := RunCodeRequest{Code: code}
	if language != "" {
		req.Context = &CodeContext{Language: language}
	}
	return ci.ExecuteCode(ctx, req, handlers)
}

// ExecuteInContext runs code in an existing context, keeping its state.
func (ci *CodeInterpreter) ExecuteInContext(ctx context.Context, contextID, language, code string, handlers *ExecutionHandlers) (*Execution, error) {
	return ci.ExecuteCode(ctx, RunCodeRequest{Context: &CodeContext{ID: contextID, Language: language}, Code: code}, handlers)
}
