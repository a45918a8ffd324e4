package opensandbox

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// OutputMessage is one stdout or stderr line.
type OutputMessage struct {
	Text      string `json:"text"`
	Timestamp int64  `json:"timestamp"`
}

// ExecutionResult is a code result; Results maps MIME types to representations.
type ExecutionResult struct {
	Results   map[string]string `json:"results,omitempty"`
	Timestamp int64             `json:"timestamp"`
}

// Text returns the text/plain result.
func (r ExecutionResult) Text() string { return r.Results["text/plain"] }

// ExecutionError is the error that ended an execution.
type ExecutionError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Timestamp int64    `json:"timestamp"`
	Traceback []string `json:"traceback"`
}

// ExecutionComplete is the successful end of an execution; ExecutionTime is in ms.
type ExecutionComplete struct {
	Timestamp     int64 `json:"timestamp"`
	ExecutionTime int64 `json:"execution_time"`
}

// ExecutionInit is the first event of an execution.
type ExecutionInit struct {
	ID        string `json:"text"`
	Timestamp int64  `json:"timestamp"`
}

// Execution is the structured result of a command or code run.
type Execution struct {
	ID       string
	Stdout   []OutputMessage
	Stderr   []OutputMessage
	Results  []ExecutionResult
	Error    *ExecutionError
	Complete *ExecutionComplete
	// ExitCode: foreground commands and session runs only (0 on complete, the error
	// value on failure); nil for background commands and code.
	ExitCode *int
	// ExecutionCount is the Jupyter execution counter of a code run (extension).
	ExecutionCount *int
}

// Text returns stdout as one text, the same under either server framing (lines
// without their endings, or endings kept): lines joined by "\n", no trailing newline.
func (e *Execution) Text() string {
	var b strings.Builder
	for _, m := range e.Stdout {
		// Line-framed texts ("a", "b") and kept endings ("a\n", "b\n") read alike
		// (protocol.md §4.2, the 1.1.1 rule): a "\n" only where neither side has one.
		s := b.String()
		ends := len(s) == 0 || strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\r")
		if m.Text != "" && !ends && !strings.HasPrefix(m.Text, "\n") && !strings.HasPrefix(m.Text, "\r") {
			b.WriteByte('\n')
		}
		b.WriteString(m.Text)
	}
	out := strings.ReplaceAll(strings.ReplaceAll(b.String(), "\r\n", "\n"), "\r", "\n")
	return strings.TrimRight(out, "\n")
}

// ExecutionHandlers are optional callbacks called in event order. A non-nil error
// aborts the run (its command is interrupted on the server) and is returned.
type ExecutionHandlers struct {
	OnInit     func(ExecutionInit) error
	OnStdout   func(OutputMessage) error
	OnStderr   func(OutputMessage) error
	OnResult   func(ExecutionResult) error
	OnComplete func(ExecutionComplete) error
	OnError    func(ExecutionError) error
	// SkipAccumulation keeps stdout/stderr out of the Execution (still delivered
	// to the handlers).
	SkipAccumulation bool
}

func (r RunCommandRequest) args() map[string]any {
	a := map[string]any{"background": r.Background}
	if len(r.Argv) > 0 {
		a["argv"] = r.Argv
	} else {
		a["command"] = r.Command
	}
	if r.Cwd != "" {
		a["working_directory"] = r.Cwd
	}
	if r.Timeout > 0 {
		a["timeout_ms"] = r.Timeout
	}
	if r.UID != nil {
		a["uid"] = *r.UID
	}
	if r.GID != nil {
		a["gid"] = *r.GID
	}
	if len(r.Envs) > 0 {
		a["envs"] = r.Envs
	}
	return a
}

// validate checks that exactly one of Command and Argv is given.
func (r RunCommandRequest) validate() error {
	if len(r.Argv) > 0 {
		if r.Command != "" {
			return &InvalidArgumentError{Field: "command", Message: "set exactly one of Command and Argv"}
		}
		return nil
	}
	if strings.TrimSpace(r.Command) == "" {
		return &InvalidArgumentError{Field: "command", Message: "command must not be blank"}
	}
	return nil
}

// RunCommand runs a shell command to completion.
func (s *Sandbox) RunCommand(ctx context.Context, command string, handlers *ExecutionHandlers) (*Execution, error) {
	return s.RunCommandWithOpts(ctx, RunCommandRequest{Command: command}, handlers)
}

// RunCommandWithOpts runs a command with full options. Cancelling ctx (or a handler
// error) ends the run and interrupts the command on the server.
func (s *Sandbox) RunCommandWithOpts(ctx context.Context, req RunCommandRequest, handlers *ExecutionHandlers) (*Execution, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	return s.runOp(ctx, "commands.start", req.args(), handlers)
}

// CreateSession creates a bash session.
func (s *Sandbox) CreateSession(ctx context.Context) (*Session, error) {
	return s.CreateSessionWithOpts(ctx, CreateSessionRequest{})
}

// CreateSessionWithOpts creates a bash session with a working directory (extension).
func (s *Sandbox) CreateSessionWithOpts(ctx context.Context, req CreateSessionRequest) (*Session, error) {
	args := map[string]any{}
	if req.Cwd != "" {
		args["working_directory"] = req.Cwd
	}
	var out Session
	if err := s.op(ctx, "commands.create_session", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RunInSession runs a command in a session.
func (s *Sandbox) RunInSession(ctx context.Context, sessionID string, req RunInSessionRequest, handlers *ExecutionHandlers) (*Execution, error) {
	return s.runOp(ctx, "commands.start_in_session", sessionRunArgs(sessionID, req), handlers)
}

func sessionRunArgs(sessionID string, req RunInSessionRequest) map[string]any {
	args := map[string]any{"session_id": sessionID, "command": req.Command}
	if req.Cwd != "" {
		args["working_directory"] = req.Cwd
	}
	if req.Timeout > 0 {
		args["timeout_ms"] = req.Timeout
	}
	return args
}

// DeleteSession deletes a session.
func (s *Sandbox) DeleteSession(ctx context.Context, sessionID string) error {
	return s.op(ctx, "commands.delete_session", map[string]any{"session_id": sessionID}, nil)
}

// InterruptCommand interrupts a running command (ExecdClient.InterruptCommand of the
// official SDK, here on Sandbox).
func (s *Sandbox) InterruptCommand(ctx context.Context, commandID string) error {
	return s.op(ctx, "commands.interrupt", map[string]any{"id": commandID}, nil)
}

// SetEnv persists an environment variable for later commands and new sessions
// (official: Sandbox.SetEnv). It appends KEY=VALUE to the sandbox env file, the file
// named by the sandbox's EXECD_ENVS variable, with a shell command (the op
// commands.set_env). Keys must match [A-Za-z_][A-Za-z0-9_]*; the value may hold
// anything but NUL and must be valid UTF-8 (both *InvalidArgumentError). A value
// without a single quote is stored verbatim; one with a single quote uses the env
// file's double-quoted form, in which $NAME may be expanded when the file is read.
// The last write of a key wins. A failed append is an *Error of kind "api" carrying
// the command's stderr.
func (s *Sandbox) SetEnv(ctx context.Context, key, value string) error {
	if !utf8.ValidString(value) {
		return &InvalidArgumentError{Field: "value", Message: "SetEnv value must be valid UTF-8"}
	}
	return s.op(ctx, "commands.set_env", map[string]any{"key": key, "value": value}, nil)
}

// GetCommandStatus returns the status of a command (official: ExecdClient).
func (s *Sandbox) GetCommandStatus(ctx context.Context, commandID string) (*CommandStatusResponse, error) {
	var out CommandStatusResponse
	if err := s.op(ctx, "commands.get_command_status", map[string]any{"id": commandID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetCommandLogs returns background command output from cursor (official: ExecdClient).
func (s *Sandbox) GetCommandLogs(ctx context.Context, commandID string, cursor *int64) (*CommandLogsResponse, error) {
	args := map[string]any{"id": commandID}
	if cursor != nil {
		args["cursor"] = *cursor
	}
	var raw struct {
		Content string `json:"content"`
		Cursor  *int64 `json:"cursor"`
	}
	if err := s.op(ctx, "commands.get_background_command_logs", args, &raw); err != nil {
		return nil, err
	}
	out := &CommandLogsResponse{Output: raw.Content, Cursor: -1}
	if raw.Cursor != nil {
		out.Cursor = *raw.Cursor
	}
	return out, nil
}

// ExecuteCode runs code (in req.Context when given) and streams its output.
func (s *Sandbox) ExecuteCode(ctx context.Context, req RunCodeRequest, handlers *ExecutionHandlers) (*Execution, error) {
	return s.runOp(ctx, "code.start", codeRunArgs(req), handlers)
}

func codeRunArgs(req RunCodeRequest) map[string]any {
	args := map[string]any{"code": req.Code}
	if req.Context != nil {
		if req.Context.ID != "" {
			args["context_id"] = req.Context.ID
		}
		if req.Context.Language != "" {
			args["language"] = req.Context.Language
		}
	}
	return args
}

// CreateContext creates a code execution context.
func (s *Sandbox) CreateContext(ctx context.Context, req CreateContextRequest) (*CodeContext, error) {
	args := map[string]any{"language": req.Language}
	if req.Cwd != "" {
		args["cwd"] = req.Cwd
	}
	var out CodeContext
	if err := s.op(ctx, "code.create_context", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetContext returns a code context (official: ExecdClient).
func (s *Sandbox) GetContext(ctx context.Context, contextID string) (*CodeContext, error) {
	var out CodeContext
	if err := s.op(ctx, "code.get_context", map[string]any{"context_id": contextID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListContexts lists the code contexts of a language ("" = all).
func (s *Sandbox) ListContexts(ctx context.Context, language string) ([]CodeContext, error) {
	args := map[string]any{}
	if language != "" {
		args["language"] = language
	}
	var out []CodeContext
	if err := s.op(ctx, "code.list_contexts", args, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteContext deletes a code context.
func (s *Sandbox) DeleteContext(ctx context.Context, contextID string) error {
	return s.op(ctx, "code.delete_context", map[string]any{"context_id": contextID}, nil)
}

// DeleteContextsByLanguage deletes every context of a language (official: ExecdClient).
func (s *Sandbox) DeleteContextsByLanguage(ctx context.Context, language string) error {
	return s.op(ctx, "code.delete_contexts", map[string]any{"language": language}, nil)
}

// InterruptCode interrupts a running code execution (official: ExecdClient).
func (s *Sandbox) InterruptCode(ctx context.Context, executionID string) error {
	return s.op(ctx, "code.interrupt", map[string]any{"id": executionID}, nil)
}

// WatchMetrics calls handler with a metrics sample about every second until ctx is
// done or handler returns an error (official: ExecdClient.WatchMetrics, with typed
// samples instead of raw events). A cancelled ctx ends it with ctx.Err().
func (s *Sandbox) WatchMetrics(ctx context.Context, handler func(Metrics) error) error {
	var started struct {
		Handle uint64 `json:"handle"`
	}
	if err := s.op(ctx, "metrics.start", nil, &started); err != nil {
		return err
	}
	// Releasing the stream's handle closes the watch connection.
	defer opRelease(started.Handle)
	next := map[string]any{"handle": started.Handle}
	for {
		var batch struct {
			Events []json.RawMessage `json:"events"`
			Done   bool              `json:"done"`
		}
		if err := opCall(ctx, "execution.next_batch", next, &batch); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, raw := range batch.Events {
			var head struct {
				Type  string     `json:"type"`
				OK    bool       `json:"ok"`
				Error *wireError `json:"error"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				return &Error{Kind: "internal", Message: "cannot decode a metrics item: " + err.Error()}
			}
			if head.Type == "end" {
				if !head.OK && head.Error != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return head.Error.toError(ctx)
				}
				return nil
			}
			var m Metrics
			if err := (&wireOut{&m}).UnmarshalJSON(raw); err != nil {
				return &Error{Kind: "internal", Message: "cannot decode a metrics sample: " + err.Error()}
			}
			if err := handler(m); err != nil {
				return err
			}
		}
		if batch.Done {
			return nil
		}
	}
}
