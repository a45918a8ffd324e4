package opensandbox

import (
	"context"
	"encoding/json"
	"io"
	"sync"
)

// execdAuthHeader carries the execd access token.
const execdAuthHeader = "X-EXECD-ACCESS-TOKEN"

// StreamEvent is one event of a streamed run, as the official low-level clients
// deliver it: Event is the execd event type ("init", "stdout", "stderr", "result",
// "error", "execution_count", "execution_complete", "metrics") and Data its JSON
// object in execd's shape.
type StreamEvent struct {
	Event string
	Data  string
	ID    string
}

// EventHandler receives the events of a stream; an error stops the stream (and
// interrupts the run on the server).
type EventHandler func(event StreamEvent) error

// ExecdClient is the official low-level client of one execd (commands, code,
// files, metrics, isolated sessions). NewExecdClient talks to the given URL
// directly (no lifecycle API): the core opens a sandbox handle over that endpoint
// (op `sandbox.open_endpoints`) and every method is an op on it.
type ExecdClient struct {
	client *Client

	once sync.Once
	sb   *Sandbox
	err  error

	// instances: the last GetExecutionInstance answer (execution_operations.go).
	instances executionInstanceCache
}

// NewExecdClient creates an ExecdClient for an execd base URL and access token.
func NewExecdClient(baseURL, accessToken string, opts ...Option) *ExecdClient {
	return &ExecdClient{client: NewClient(baseURL, accessToken, execdAuthHeader, opts...)}
}

// scopedExecd is an ExecdClient over an existing sandbox (or a file-scoped view).
func scopedExecd(sb *Sandbox) *ExecdClient {
	e := &ExecdClient{sb: sb}
	e.once.Do(func() {})
	return e
}

// directConnection is the connection of a client that talks to one endpoint: the
// key travels in the endpoint's headers, not as a lifecycle key.
func (c *Client) directConnection() map[string]any {
	cfg := ConnectionConfig{Domain: c.baseURL, Retry: c.retry}
	if c.timeout != nil {
		cfg.RequestTimeout = *c.timeout
	}
	conn := cfg.sessionConnection()
	conn["api_key"] = nil
	delete(conn, "headers")
	return conn
}

// openDirect opens a sandbox handle over the client's URL as execd (and, when
// asEgress, as the egress sidecar too).
func openDirect(c *Client, asEgress bool) (*Sandbox, error) {
	if c.optErr != nil {
		return nil, c.optErr
	}
	if c.baseURL == "" {
		return nil, &InvalidArgumentError{Field: "baseURL", Message: "must not be empty"}
	}
	args := directArgs(c, asEgress)
	var opened struct {
		ID     string `json:"id"`
		Handle uint64 `json:"handle"`
	}
	if err := opCall(context.Background(), "sandbox.open_endpoints", args, &opened); err != nil {
		return nil, err
	}
	return newSandbox(opened.ID, opened.Handle, ConnectionConfig{Domain: c.baseURL}), nil
}

// directArgs are the arguments of `sandbox.open_endpoints` for c.
func directArgs(c *Client, asEgress bool) map[string]any {
	ep := map[string]any{"endpoint": c.baseURL, "headers": c.endpointHeaders()}
	args := map[string]any{"connection": c.directConnection(), "execd": ep}
	if asEgress {
		args["egress"] = ep
	}
	return args
}

func (e *ExecdClient) sandbox() (*Sandbox, error) {
	e.once.Do(func() { e.sb, e.err = openDirect(e.client, false) })
	return e.sb, e.err
}

// Close frees the native handle of the client (the sandbox is untouched).
func (e *ExecdClient) Close() error {
	if sb, _ := e.sandbox(); sb != nil {
		return sb.Close()
	}
	return nil
}

// rawEvent is ev as execd's JSON event (the official SDK hands the raw line over).
func rawEvent(ev *wireEvent) StreamEvent {
	m := map[string]any{"type": ev.Type}
	if ev.Timestamp != 0 {
		m["timestamp"] = ev.Timestamp
	}
	switch ev.Type {
	case "init":
		m["text"] = ev.ID
	case "stdout", "stderr", "status":
		if ev.Text != nil {
			m["text"] = *ev.Text
		}
	case "result":
		results := map[string]any{}
		for k, v := range ev.Raw {
			results[k] = v
		}
		if _, ok := results["text/plain"]; !ok && ev.Text != nil {
			results["text/plain"] = *ev.Text
		}
		m["results"] = results
	case "error":
		tb := ev.Traceback
		if tb == nil {
			tb = []string{}
		}
		m["error"] = map[string]any{"ename": ev.Name, "evalue": ev.Value, "traceback": tb}
	case "execution_count":
		if ev.Count != nil {
			m["execution_count"] = *ev.Count
		}
	case "execution_complete":
		m["execution_time"] = ev.TimeMs
	}
	b, _ := json.Marshal(m)
	return StreamEvent{Event: ev.Type, Data: string(b)}
}

// stream runs a start op and hands every event to handler as a StreamEvent.
func (e *ExecdClient) stream(ctx context.Context, op string, args map[string]any, handler EventHandler) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return streamOn(ctx, sb, op, args, handler)
}

func streamOn(ctx context.Context, sb *Sandbox, op string, args map[string]any, handler EventHandler) error {
	var each func(*wireEvent) error
	if handler != nil {
		each = func(ev *wireEvent) error { return handler(rawEvent(ev)) }
	}
	_, err := sb.runEvents(ctx, op, args, each)
	return err
}

// Ping checks that execd answers.
func (e *ExecdClient) Ping(ctx context.Context) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.Ping(ctx)
}

// ListContexts lists the code contexts of a language.
func (e *ExecdClient) ListContexts(ctx context.Context, language string) ([]CodeContext, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.ListContexts(ctx, language)
}

// CreateContext creates a code context.
func (e *ExecdClient) CreateContext(ctx context.Context, req CreateContextRequest) (*CodeContext, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.CreateContext(ctx, req)
}

// GetContext returns a code context.
func (e *ExecdClient) GetContext(ctx context.Context, contextID string) (*CodeContext, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetContext(ctx, contextID)
}

// DeleteContext deletes a code context.
func (e *ExecdClient) DeleteContext(ctx context.Context, contextID string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.DeleteContext(ctx, contextID)
}

// DeleteContextsByLanguage deletes every code context of a language.
func (e *ExecdClient) DeleteContextsByLanguage(ctx context.Context, language string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.DeleteContextsByLanguage(ctx, language)
}

// ExecuteCode runs code and streams its events to handler.
func (e *ExecdClient) ExecuteCode(ctx context.Context, req RunCodeRequest, handler EventHandler) error {
	return e.stream(ctx, "code.start", codeRunArgs(req), handler)
}

// InterruptCode interrupts a running code execution.
func (e *ExecdClient) InterruptCode(ctx context.Context, sessionID string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.InterruptCode(ctx, sessionID)
}

// CreateSession creates a bash session (optionally with a working directory).
func (e *ExecdClient) CreateSession(ctx context.Context, opts ...CreateSessionRequest) (*Session, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	if len(opts) > 0 {
		return sb.CreateSessionWithOpts(ctx, opts[0])
	}
	return sb.CreateSession(ctx)
}

// RunInSession runs a command in a bash session and streams its events.
func (e *ExecdClient) RunInSession(ctx context.Context, sessionID string, req RunInSessionRequest, handler EventHandler) error {
	return e.stream(ctx, "commands.start_in_session", sessionRunArgs(sessionID, req), handler)
}

// DeleteSession deletes a bash session.
func (e *ExecdClient) DeleteSession(ctx context.Context, sessionID string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.DeleteSession(ctx, sessionID)
}

// RunCommand runs a command and streams its events to handler.
func (e *ExecdClient) RunCommand(ctx context.Context, req RunCommandRequest, handler EventHandler) error {
	if err := req.validate(); err != nil {
		return err
	}
	return e.stream(ctx, "commands.start", req.args(), handler)
}

// InterruptCommand interrupts a running command.
func (e *ExecdClient) InterruptCommand(ctx context.Context, sessionID string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.InterruptCommand(ctx, sessionID)
}

// GetCommandStatus returns the status of a command.
func (e *ExecdClient) GetCommandStatus(ctx context.Context, commandID string) (*CommandStatusResponse, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetCommandStatus(ctx, commandID)
}

// GetCommandLogs returns a background command's output from cursor.
func (e *ExecdClient) GetCommandLogs(ctx context.Context, commandID string, cursor *int64) (*CommandLogsResponse, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetCommandLogs(ctx, commandID, cursor)
}

// GetMetrics returns the sandbox's resource metrics.
func (e *ExecdClient) GetMetrics(ctx context.Context) (*Metrics, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetMetrics(ctx)
}

// WatchMetrics streams metrics samples as "metrics" events (Data: the sample's
// JSON) until ctx is done or handler returns an error.
func (e *ExecdClient) WatchMetrics(ctx context.Context, handler EventHandler) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.WatchMetrics(ctx, func(m Metrics) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return handler(StreamEvent{Event: "metrics", Data: string(b)})
	})
}

// GetFileInfo returns the metadata of a file.
func (e *ExecdClient) GetFileInfo(ctx context.Context, path string) (map[string]FileInfo, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetFileInfo(ctx, path)
}

// DeleteFiles deletes files.
func (e *ExecdClient) DeleteFiles(ctx context.Context, paths []string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.DeleteFiles(ctx, paths)
}

// SetPermissions changes modes and owners.
func (e *ExecdClient) SetPermissions(ctx context.Context, req PermissionsRequest) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.SetPermissions(ctx, req)
}

// MoveFiles moves or renames files.
func (e *ExecdClient) MoveFiles(ctx context.Context, req MoveRequest) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.MoveFiles(ctx, req)
}

// SearchFiles finds files matching a glob under dir.
func (e *ExecdClient) SearchFiles(ctx context.Context, dir string, pattern string) ([]FileInfo, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.SearchFiles(ctx, dir, pattern)
}

// ListDirectory lists a directory's immediate children.
func (e *ExecdClient) ListDirectory(ctx context.Context, path string) ([]FileInfo, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.ListDirectory(ctx, path)
}

// ListDirectoryWithDepth lists a directory down to depth levels.
func (e *ExecdClient) ListDirectoryWithDepth(ctx context.Context, path string, depth int) ([]FileInfo, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.ListDirectoryWithDepth(ctx, path, depth)
}

// ReplaceInFiles replaces text in files.
func (e *ExecdClient) ReplaceInFiles(ctx context.Context, req ReplaceRequest) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.ReplaceInFiles(ctx, req)
}

// ReplaceInFilesDetailed replaces text and returns the counts per file.
func (e *ExecdClient) ReplaceInFilesDetailed(ctx context.Context, req ReplaceRequest) (ReplaceResponse, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.ReplaceInFilesDetailed(ctx, req)
}

// UploadFile uploads one file (streamed).
func (e *ExecdClient) UploadFile(ctx context.Context, file io.Reader, opts UploadFileOptions) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.UploadFile(ctx, file, opts)
}

// UploadFiles uploads several files.
func (e *ExecdClient) UploadFiles(ctx context.Context, entries []UploadFileEntry) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.UploadFiles(ctx, entries)
}

// DownloadFile streams a file (rangeHeader e.g. "bytes=0-1023", or "").
func (e *ExecdClient) DownloadFile(ctx context.Context, remotePath string, rangeHeader string, opts ...DownloadFileOptions) (io.ReadCloser, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.DownloadFile(ctx, remotePath, rangeHeader, opts...)
}

// CreateDirectory creates a directory and its parents.
func (e *ExecdClient) CreateDirectory(ctx context.Context, path string, mode int) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.CreateDirectory(ctx, path, mode)
}

// DeleteDirectory deletes a directory recursively.
func (e *ExecdClient) DeleteDirectory(ctx context.Context, path string) error {
	sb, err := e.sandbox()
	if err != nil {
		return err
	}
	return sb.DeleteDirectory(ctx, path)
}

// FilesWithIdentity returns file operations performed as uid/gid (the
// /v1/filesystem/{uid}/{gid} routes). Servers without them fail; requests never
// fall back to the default identity.
func (e *ExecdClient) FilesWithIdentity(uid, gid uint32) (IdentityFilesystem, error) {
	if err := checkIdentity(uid, gid); err != nil {
		return nil, err
	}
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	return scopedExecd(sb.view(map[string]any{"identity": map[string]any{"uid": uid, "gid": gid}})), nil
}

func checkIdentity(uid, gid uint32) error {
	if uid > ^uint32(0)-1 {
		return &InvalidArgumentError{Field: "uid", Message: "must be at most 4294967294"}
	}
	if gid > ^uint32(0)-1 {
		return &InvalidArgumentError{Field: "gid", Message: "must be at most 4294967294"}
	}
	return nil
}

// IdentityFilesystem is the file API bound to explicit Linux credentials.
type IdentityFilesystem interface {
	GetFileInfo(context.Context, string) (map[string]FileInfo, error)
	DeleteFiles(context.Context, []string) error
	SetPermissions(context.Context, PermissionsRequest) error
	MoveFiles(context.Context, MoveRequest) error
	SearchFiles(context.Context, string, string) ([]FileInfo, error)
	ListDirectory(context.Context, string) ([]FileInfo, error)
	ListDirectoryWithDepth(context.Context, string, int) ([]FileInfo, error)
	ReplaceInFiles(context.Context, ReplaceRequest) error
	ReplaceInFilesDetailed(context.Context, ReplaceRequest) (ReplaceResponse, error)
	UploadFile(context.Context, io.Reader, UploadFileOptions) error
	UploadFiles(context.Context, []UploadFileEntry) error
	DownloadFile(context.Context, string, string, ...DownloadFileOptions) (io.ReadCloser, error)
	CreateDirectory(context.Context, string, int) error
	DeleteDirectory(context.Context, string) error
}

// FilesWithIdentity returns file operations performed as uid/gid on this sandbox.
func (s *Sandbox) FilesWithIdentity(uid, gid uint32) (IdentityFilesystem, error) {
	if err := checkIdentity(uid, gid); err != nil {
		return nil, err
	}
	return scopedExecd(s.view(map[string]any{"identity": map[string]any{"uid": uid, "gid": gid}})), nil
}
