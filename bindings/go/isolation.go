package opensandbox

import (
	"context"
	"time"
)

// Isolated sessions: nested, hardened bash sessions inside a sandbox (ops
// `isolation.*` of bindings/common).

// IsolatedWorkspaceSpec is the workspace bind of a session ("rw" | "overlay" | "ro").
type IsolatedWorkspaceSpec struct {
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"`
}

// EnvPassthroughSpec selects the environment variables passed into a session.
type EnvPassthroughSpec struct {
	Mode string   `json:"mode,omitempty"`
	Keys []string `json:"keys,omitempty"`
}

// BindMount binds a sandbox path into a session.
type BindMount struct {
	Source   string `json:"source"`
	Dest     string `json:"dest,omitempty"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

// IsolatedOverlaySpec is an extra overlay of a session (an extension of this
// package: the official Go SDK has no overlays field; the wire and the Python SDK
// do). Persist keeps the overlay's changes after the session ends.
type IsolatedOverlaySpec struct {
	Path    string `json:"path"`
	Mode    string `json:"mode,omitempty"`
	Persist *bool  `json:"persist,omitempty"`
}

// CreateIsolatedSessionRequest describes a new isolated session.
type CreateIsolatedSessionRequest struct {
	Workspace          IsolatedWorkspaceSpec `json:"workspace"`
	Overlays           []IsolatedOverlaySpec `json:"overlays,omitempty"`
	Profile            string                `json:"profile,omitempty"`
	ExtraWritable      []string              `json:"extra_writable,omitempty"`
	Binds              []BindMount           `json:"binds,omitempty"`
	ShareNet           *bool                 `json:"share_net,omitempty"`
	EnvPassthrough     *EnvPassthroughSpec   `json:"env_passthrough,omitempty"`
	Uid                *uint32               `json:"uid,omitempty"`
	Gid                *uint32               `json:"gid,omitempty"`
	UidMode            string                `json:"uid_mode,omitempty"`
	IdleTimeoutSeconds int                   `json:"idle_timeout_seconds,omitempty"`
}

// IsolatedSessionInfo is a created (or attached) session; the echo fields are set
// when the server echoes the creation parameters.
type IsolatedSessionInfo struct {
	SessionID          string                 `json:"session_id"`
	CreatedAt          time.Time              `json:"created_at"`
	Overlays           []IsolatedOverlaySpec  `json:"overlays,omitempty"`
	Profile            string                 `json:"profile,omitempty"`
	Workspace          *IsolatedWorkspaceSpec `json:"workspace,omitempty"`
	ExtraWritable      []string               `json:"extra_writable,omitempty"`
	Binds              []BindMount            `json:"binds,omitempty"`
	ShareNet           *bool                  `json:"share_net,omitempty"`
	EnvPassthrough     *EnvPassthroughSpec    `json:"env_passthrough,omitempty"`
	Uid                *uint32                `json:"uid,omitempty"`
	Gid                *uint32                `json:"gid,omitempty"`
	UidMode            string                 `json:"uid_mode,omitempty"`
	IdleTimeoutSeconds *int                   `json:"idle_timeout_seconds,omitempty"`
}

// IsolatedSessionState is the current state of a session.
type IsolatedSessionState struct {
	Status               string                 `json:"status"`
	Overlays             []IsolatedOverlaySpec  `json:"overlays,omitempty"`
	CreatedAt            time.Time              `json:"created_at"`
	LastRunAt            time.Time              `json:"last_run_at"`
	IdleRemainingSeconds *int                   `json:"idle_remaining_seconds,omitempty"`
	Profile              string                 `json:"profile,omitempty"`
	Workspace            *IsolatedWorkspaceSpec `json:"workspace,omitempty"`
	ExtraWritable        []string               `json:"extra_writable,omitempty"`
	Binds                []BindMount            `json:"binds,omitempty"`
	ShareNet             *bool                  `json:"share_net,omitempty"`
	EnvPassthrough       *EnvPassthroughSpec    `json:"env_passthrough,omitempty"`
	Uid                  *uint32                `json:"uid,omitempty"`
	Gid                  *uint32                `json:"gid,omitempty"`
	UidMode              string                 `json:"uid_mode,omitempty"`
	IdleTimeoutSeconds   *int                   `json:"idle_timeout_seconds,omitempty"`
}

// IsolatedSessionSummary is one session of a list.
type IsolatedSessionSummary struct {
	SessionID            string    `json:"session_id"`
	Status               string    `json:"status"`
	CreatedAt            time.Time `json:"created_at"`
	LastRunAt            time.Time `json:"last_run_at"`
	IdleRemainingSeconds *int      `json:"idle_remaining_seconds,omitempty"`
}

// IsolatedRunRequest is a foreground run (TimeoutSeconds is enforced by the server).
type IsolatedRunRequest struct {
	Code           string            `json:"code"`
	Envs           map[string]string `json:"envs,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
}

// IsolatedRunOpts configures a background run (TimeoutSeconds is never sent for
// background runs: they are not time-limited).
type IsolatedRunOpts struct {
	Envs           map[string]string
	TimeoutSeconds int
}

// IsolatedBackgroundRun is a started background run.
type IsolatedBackgroundRun struct {
	SessionID string    `json:"session_id"`
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
}

// IsolatedRunStatus is the state of a background run.
type IsolatedRunStatus struct {
	SessionID  string     `json:"session_id"`
	RunID      string     `json:"run_id"`
	Running    bool       `json:"running"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// HardeningLayerState is whether one hardening layer is enforced.
type HardeningLayerState struct {
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// HardeningStatus is execd's init-mode and hardening state.
type HardeningStatus struct {
	InitMode     string               `json:"init_mode"`
	SignalShield bool                 `json:"signal_shield"`
	CapDrop      *HardeningLayerState `json:"cap_drop"`
	Seccomp      *HardeningLayerState `json:"seccomp"`
	Landlock     *HardeningLayerState `json:"landlock"`
	Ebpf         *HardeningLayerState `json:"ebpf"`
}

// IsolatedCapabilities reports what isolation the sandbox offers.
type IsolatedCapabilities struct {
	Available        bool             `json:"available"`
	Isolator         string           `json:"isolator,omitempty"`
	Version          string           `json:"version,omitempty"`
	Message          string           `json:"message,omitempty"`
	SetprivAvailable bool             `json:"setpriv_available"`
	UsernsAvailable  bool             `json:"userns_available"`
	CommitSupported  bool             `json:"commit_supported"`
	DiffSupported    bool             `json:"diff_supported"`
	Hardening        *HardeningStatus `json:"hardening,omitempty"`
}

func isolationCreateArgs(req CreateIsolatedSessionRequest) map[string]any {
	args, _ := wireArg(req).(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	// A zero Workspace means none was given (a session of overlays only): the core
	// then asks for a workspace or an overlay rather than sending an empty path.
	if req.Workspace == (IsolatedWorkspaceSpec{}) {
		delete(args, "workspace")
	}
	return args
}

func isolationRunArgs(sessionID string, req IsolatedRunRequest) map[string]any {
	args := map[string]any{"session_id": sessionID, "code": req.Code}
	if len(req.Envs) > 0 {
		args["envs"] = req.Envs
	}
	if req.TimeoutSeconds > 0 {
		args["timeout_s"] = req.TimeoutSeconds
	}
	return args
}

// IsolatedCreate creates an isolated session.
func (s *Sandbox) IsolatedCreate(ctx context.Context, req CreateIsolatedSessionRequest) (*IsolatedSessionInfo, error) {
	var out IsolatedSessionInfo
	if err := s.opW(ctx, "isolation.create", isolationCreateArgs(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// IsolatedGet returns a session's state.
func (s *Sandbox) IsolatedGet(ctx context.Context, sessionID string) (*IsolatedSessionState, error) {
	var out IsolatedSessionState
	if err := s.opW(ctx, "isolation.get", map[string]any{"session_id": sessionID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// IsolatedRun runs code in a session (Deprecated upstream: use IsolationSession.Run).
func (s *Sandbox) IsolatedRun(ctx context.Context, sessionID string, req IsolatedRunRequest, handlers *ExecutionHandlers) (*Execution, error) {
	return s.runOp(ctx, "isolation.start", isolationRunArgs(sessionID, req), handlers)
}

// IsolatedDelete deletes a session.
func (s *Sandbox) IsolatedDelete(ctx context.Context, sessionID string) error {
	return s.op(ctx, "isolation.delete", map[string]any{"session_id": sessionID}, nil)
}

// IsolatedCapabilities is IsolationCapabilities (the deprecated upstream name).
func (s *Sandbox) IsolatedCapabilities(ctx context.Context) (*IsolatedCapabilities, error) {
	return s.IsolationCapabilities(ctx)
}

// IsolationCapabilities reports the isolation the sandbox offers.
func (s *Sandbox) IsolationCapabilities(ctx context.Context) (*IsolatedCapabilities, error) {
	var out IsolatedCapabilities
	if err := s.opW(ctx, "isolation.capabilities", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// IsolationListSessions lists the active sessions.
func (s *Sandbox) IsolationListSessions(ctx context.Context) ([]IsolatedSessionSummary, error) {
	var out []IsolatedSessionSummary
	if err := s.opW(ctx, "isolation.list", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Sandbox) isolatedRunBackground(ctx context.Context, sessionID, code string, opts IsolatedRunOpts) (*IsolatedBackgroundRun, error) {
	if code == "" {
		return nil, &InvalidArgumentError{Field: "code", Message: "must not be empty"}
	}
	args := map[string]any{"session_id": sessionID, "code": code}
	if len(opts.Envs) > 0 {
		args["envs"] = opts.Envs
	}
	var out IsolatedBackgroundRun
	if err := s.opW(ctx, "isolation.run_background", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *Sandbox) isolatedRunStatus(ctx context.Context, sessionID, runID string) (*IsolatedRunStatus, error) {
	if runID == "" {
		return nil, &InvalidArgumentError{Field: "runID", Message: "must not be empty"}
	}
	var out IsolatedRunStatus
	args := map[string]any{"session_id": sessionID, "run_id": runID}
	if err := s.opW(ctx, "isolation.run_status", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *Sandbox) isolatedRunLogs(ctx context.Context, sessionID, runID string, cursor int64) (string, int64, error) {
	if runID == "" {
		return "", 0, &InvalidArgumentError{Field: "runID", Message: "must not be empty"}
	}
	if cursor < 0 {
		return "", 0, &InvalidArgumentError{Field: "cursor", Message: "must not be negative"}
	}
	var out struct {
		Text   string `json:"text"`
		Cursor int64  `json:"cursor"`
	}
	args := map[string]any{"session_id": sessionID, "run_id": runID, "cursor": cursor}
	if err := s.op(ctx, "isolation.run_logs", args, &out); err != nil {
		return "", 0, err
	}
	return out.Text, out.Cursor, nil
}

// IsolationSession is a handle to one isolated session.
type IsolationSession struct {
	info    *IsolatedSessionInfo
	sandbox *Sandbox
	files   *ExecdClient
}

// IsolationCreate creates an isolated session and returns its handle.
func (s *Sandbox) IsolationCreate(ctx context.Context, req CreateIsolatedSessionRequest) (*IsolationSession, error) {
	info, err := s.IsolatedCreate(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.newIsolationSession(info), nil
}

// IsolationAttach returns a handle to an existing session (its creation parameters
// are copied from the server's echo when present).
func (s *Sandbox) IsolationAttach(ctx context.Context, sessionID string) (*IsolationSession, error) {
	if sessionID == "" {
		return nil, &InvalidArgumentError{Field: "sessionID", Message: "must not be empty"}
	}
	var info IsolatedSessionInfo
	if err := s.opW(ctx, "isolation.attach", map[string]any{"session_id": sessionID}, &info); err != nil {
		return nil, err
	}
	if info.SessionID == "" {
		info.SessionID = sessionID
	}
	return s.newIsolationSession(&info), nil
}

func (s *Sandbox) newIsolationSession(info *IsolatedSessionInfo) *IsolationSession {
	files := scopedExecd(s.view(map[string]any{"isolated_session": info.SessionID}))
	return &IsolationSession{info: info, sandbox: s, files: files}
}

// IsolationRunOnce creates a session, runs code in it and deletes it.
func (s *Sandbox) IsolationRunOnce(ctx context.Context, req CreateIsolatedSessionRequest, run IsolatedRunRequest, handlers *ExecutionHandlers) (*Execution, error) {
	session, err := s.IsolationCreate(ctx, req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = session.Delete(context.Background()) }()
	return session.Run(ctx, run, handlers)
}

// IsolationWithSession creates a session, calls fn with it and deletes it.
func (s *Sandbox) IsolationWithSession(ctx context.Context, req CreateIsolatedSessionRequest, fn func(*IsolationSession) error) error {
	session, err := s.IsolationCreate(ctx, req)
	if err != nil {
		return err
	}
	defer func() { _ = session.Delete(context.Background()) }()
	return fn(session)
}

// SessionID returns the session id.
func (s *IsolationSession) SessionID() string { return s.info.SessionID }

// Info returns the session's creation info.
func (s *IsolationSession) Info() *IsolatedSessionInfo { return s.info }

// Files returns file operations resolved inside the session's mounts.
func (s *IsolationSession) Files() *ExecdClient { return s.files }

// Run runs code in the session in the foreground.
func (s *IsolationSession) Run(ctx context.Context, req IsolatedRunRequest, handlers *ExecutionHandlers) (*Execution, error) {
	return s.sandbox.IsolatedRun(ctx, s.info.SessionID, req, handlers)
}

// RunBackground starts a detached run; poll GetRunStatus and read GetRunLogs.
func (s *IsolationSession) RunBackground(ctx context.Context, code string, opts ...IsolatedRunOpts) (*IsolatedBackgroundRun, error) {
	var o IsolatedRunOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	return s.sandbox.isolatedRunBackground(ctx, s.info.SessionID, code, o)
}

// GetRunStatus returns the state of a background run.
func (s *IsolationSession) GetRunStatus(ctx context.Context, runID string) (*IsolatedRunStatus, error) {
	return s.sandbox.isolatedRunStatus(ctx, s.info.SessionID, runID)
}

// GetRunLogs returns a background run's combined output from cursor and the cursor
// to continue from.
func (s *IsolationSession) GetRunLogs(ctx context.Context, runID string, cursor int64) (string, int64, error) {
	return s.sandbox.isolatedRunLogs(ctx, s.info.SessionID, runID, cursor)
}

// Get returns the session's state.
func (s *IsolationSession) Get(ctx context.Context) (*IsolatedSessionState, error) {
	return s.sandbox.IsolatedGet(ctx, s.info.SessionID)
}

// Delete deletes the session.
func (s *IsolationSession) Delete(ctx context.Context) error {
	return s.sandbox.IsolatedDelete(ctx, s.info.SessionID)
}

// The same operations on the low-level client.

// IsolatedCreate creates an isolated session.
func (e *ExecdClient) IsolatedCreate(ctx context.Context, req CreateIsolatedSessionRequest) (*IsolatedSessionInfo, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.IsolatedCreate(ctx, req)
}

// IsolatedGet returns a session's state.
func (e *ExecdClient) IsolatedGet(ctx context.Context, sessionID string) (*IsolatedSessionState, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.IsolatedGet(ctx, sessionID)
}

// IsolatedList lists the active sessions.
func (e *ExecdClient) IsolatedList(ctx context.Context) ([]IsolatedSessionSummary, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.IsolationListSessions(ctx)
}

// IsolatedRun runs code in a session and streams its events.
func (e *ExecdClient) IsolatedRun(ctx context.Context, sessionID string, req IsolatedRunRequest, handler EventHandler) error {
	return e.stream(ctx, "isolation.start", isolationRunArgs(sessionID, req), handler)
}

// IsolatedRunBackground starts a detached run.
func (e *ExecdClient) IsolatedRunBackground(ctx context.Context, sessionID, code string, opts IsolatedRunOpts) (*IsolatedBackgroundRun, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.isolatedRunBackground(ctx, sessionID, code, opts)
}

// IsolatedRunStatus returns the state of a background run.
func (e *ExecdClient) IsolatedRunStatus(ctx context.Context, sessionID, runID string) (*IsolatedRunStatus, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.isolatedRunStatus(ctx, sessionID, runID)
}

// IsolatedRunLogs returns a background run's output from cursor and the next cursor.
func (e *ExecdClient) IsolatedRunLogs(ctx context.Context, sessionID, runID string, cursor int64) (string, int64, error) {
	sb, err := e.sandbox()
	if err != nil {
		return "", 0, err
	}
	return sb.isolatedRunLogs(ctx, sessionID, runID, cursor)
}

// IsolatedDelete deletes a session.
func (e *ExecdClient) IsolatedDelete(ctx context.Context, sessionID string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.IsolatedDelete(ctx, sessionID)
}

// IsolatedCapabilities reports the isolation the sandbox offers.
func (e *ExecdClient) IsolatedCapabilities(ctx context.Context) (*IsolatedCapabilities, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.IsolationCapabilities(ctx)
}
