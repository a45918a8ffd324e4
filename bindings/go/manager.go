package opensandbox

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// SandboxManager runs lifecycle operations on sandboxes by id. Close frees it.
type SandboxManager struct {
	mu      sync.RWMutex
	handle  uint64 // the op-layer session's manager handle; 0 once closed
	initErr error
	rewrite ConnectionConfig // EndpointHostRewrite only
}

// NewSandboxManager creates a SandboxManager from config. A configuration error is
// reported by each call.
func NewSandboxManager(config ConnectionConfig) *SandboxManager {
	m := &SandboxManager{rewrite: ConnectionConfig{EndpointHostRewrite: config.EndpointHostRewrite}}
	if err := config.validate(); err != nil {
		m.initErr = err
		return m
	}
	var opened struct {
		Handle uint64 `json:"handle"`
	}
	args := map[string]any{"connection": config.sessionConnection()}
	if err := opCall(context.Background(), "manager.new", args, &opened); err != nil {
		m.initErr = err
		return m
	}
	m.handle = opened.Handle
	runtime.SetFinalizer(m, func(m *SandboxManager) { _ = m.Close() })
	return m
}

// Close releases local resources.
func (m *SandboxManager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	opRelease(m.handle)
	m.handle = 0
	return nil
}

// call runs manager op `op` (manager.*) on this manager and decodes its result.
func (m *SandboxManager) call(ctx context.Context, op string, args map[string]any, out any) error {
	if m.initErr != nil {
		return m.initErr
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.handle == 0 {
		return &Error{Kind: "invalid_argument", Message: "the manager was closed"}
	}
	if args == nil {
		args = map[string]any{}
	}
	args["manager"] = m.handle
	return opWire(ctx, "manager."+op, args, out)
}

// ListSandboxInfos lists sandboxes (one page).
func (m *SandboxManager) ListSandboxInfos(ctx context.Context, filter ListOptions) (*ListSandboxesResponse, error) {
	args := map[string]any{}
	if len(filter.States) > 0 {
		args["states"] = filter.States
	}
	if len(filter.Metadata) > 0 {
		args["metadata"] = filter.Metadata
	}
	if filter.Page > 0 {
		args["page"] = filter.Page
	}
	if filter.PageSize > 0 {
		args["page_size"] = filter.PageSize
	}
	var out ListSandboxesResponse
	if err := m.call(ctx, "list_sandbox_infos", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSandboxInfo returns one sandbox.
func (m *SandboxManager) GetSandboxInfo(ctx context.Context, sandboxID string) (*SandboxInfo, error) {
	var out SandboxInfo
	if err := m.call(ctx, "get_sandbox_info", map[string]any{"sandbox_id": sandboxID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchSandboxMetadata sets or removes metadata keys.
func (m *SandboxManager) PatchSandboxMetadata(ctx context.Context, sandboxID string, patch MetadataPatch) (*SandboxInfo, error) {
	var out SandboxInfo
	if err := m.call(ctx, "patch_sandbox_metadata", map[string]any{"sandbox_id": sandboxID, "patch": patch}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// KillSandbox deletes a sandbox.
func (m *SandboxManager) KillSandbox(ctx context.Context, sandboxID string) error {
	return m.call(ctx, "kill_sandbox", map[string]any{"sandbox_id": sandboxID}, nil)
}

// PauseSandbox pauses a sandbox.
func (m *SandboxManager) PauseSandbox(ctx context.Context, sandboxID string) error {
	return m.call(ctx, "pause_sandbox", map[string]any{"sandbox_id": sandboxID}, nil)
}

// ResumeSandbox resumes a paused sandbox.
func (m *SandboxManager) ResumeSandbox(ctx context.Context, sandboxID string) error {
	return m.call(ctx, "resume_sandbox", map[string]any{"sandbox_id": sandboxID}, nil)
}

// RenewSandbox sets a sandbox's expiry to now + duration.
func (m *SandboxManager) RenewSandbox(ctx context.Context, sandboxID string, duration time.Duration) (*RenewExpirationResponse, error) {
	var out RenewExpirationResponse
	if err := m.call(ctx, "renew_sandbox", map[string]any{"sandbox_id": sandboxID, "seconds": duration.Seconds()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetEndpoint returns the endpoint of a port of a sandbox (extension).
func (m *SandboxManager) GetEndpoint(ctx context.Context, sandboxID string, port int) (*Endpoint, error) {
	var out Endpoint
	if err := m.call(ctx, "get_endpoint", map[string]any{"sandbox_id": sandboxID, "port": port}, &out); err != nil {
		return nil, err
	}
	return m.rewrite.rewriteEndpoint(&out), nil
}

// CreateSnapshot creates a snapshot of a sandbox.
func (m *SandboxManager) CreateSnapshot(ctx context.Context, sandboxID string, req CreateSnapshotRequest) (*SnapshotInfo, error) {
	args := map[string]any{"sandbox_id": sandboxID}
	if req.Name != "" {
		args["name"] = req.Name
	}
	var out SnapshotInfo
	if err := m.call(ctx, "create_snapshot", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSnapshot returns a snapshot.
func (m *SandboxManager) GetSnapshot(ctx context.Context, snapshotID string) (*SnapshotInfo, error) {
	var out SnapshotInfo
	if err := m.call(ctx, "get_snapshot", map[string]any{"snapshot_id": snapshotID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSnapshots lists snapshots (one page).
func (m *SandboxManager) ListSnapshots(ctx context.Context, filter ListSnapshotsOptions) (*ListSnapshotsResponse, error) {
	args := map[string]any{}
	if filter.Name != "" {
		return nil, &InvalidArgumentError{Field: "Name", Message: "filtering snapshots by name is not supported by this package's core"}
	}
	if filter.SandboxID != "" {
		args["sandbox_id"] = filter.SandboxID
	}
	if len(filter.States) > 0 {
		args["states"] = filter.States
	}
	if filter.Page > 0 {
		args["page"] = filter.Page
	}
	if filter.PageSize > 0 {
		args["page_size"] = filter.PageSize
	}
	var out ListSnapshotsResponse
	if err := m.call(ctx, "list_snapshots", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSnapshot deletes a snapshot.
func (m *SandboxManager) DeleteSnapshot(ctx context.Context, snapshotID string) error {
	return m.call(ctx, "delete_snapshot", map[string]any{"snapshot_id": snapshotID}, nil)
}
