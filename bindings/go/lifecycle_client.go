package opensandbox

import (
	"context"
	"sync"
	"time"
)

// lifecycleAuthHeader is the lifecycle API's auth header.
const lifecycleAuthHeader = "OPEN-SANDBOX-API-KEY"

// LifecycleClient is the official low-level client of the lifecycle API. Each method
// is one op of the shared core (manager.*, sandbox.* by id), not a request built
// here: the core applies the same validation, retries and error mapping as for
// SandboxManager.
type LifecycleClient struct {
	*Client

	once  sync.Once
	mgr   *SandboxManager
	cache *EndpointCache // nil: no endpoint cache
}

// NewLifecycleClient creates a LifecycleClient. baseURL may include the version
// prefix (e.g. "http://localhost:8080/v1").
func NewLifecycleClient(baseURL, apiKey string, opts ...Option) *LifecycleClient {
	return &LifecycleClient{Client: NewClient(baseURL, apiKey, lifecycleAuthHeader, opts...)}
}

func (c *LifecycleClient) manager() (*SandboxManager, error) {
	if c.optErr != nil {
		return nil, c.optErr
	}
	c.once.Do(func() { c.mgr = NewSandboxManager(c.connectionConfig()) })
	return c.mgr, nil
}

// Close frees the native manager behind the client (idempotent).
func (c *LifecycleClient) Close() error {
	if c.mgr != nil {
		return c.mgr.Close()
	}
	return nil
}

// byID runs a sandbox-bound op on a sandbox id through this client's connection.
func (c *LifecycleClient) byID(ctx context.Context, op, id string, args map[string]any, out any) error {
	if c.optErr != nil {
		return c.optErr
	}
	if id == "" {
		return &InvalidArgumentError{Field: "sandboxID", Message: "must not be empty"}
	}
	if args == nil {
		args = map[string]any{}
	}
	cfg := c.connectionConfig()
	args["connection"] = cfg.sessionConnection()
	args["sandbox"] = id
	if out == nil {
		return opCall(ctx, op, args, nil)
	}
	return opCall(ctx, op, args, &wireOut{out})
}

// CreateSandbox creates a sandbox and returns its info without waiting for it to
// become ready (the official semantics; use CreateSandbox (the function) to wait).
func (c *LifecycleClient) CreateSandbox(ctx context.Context, req CreateSandboxRequest) (*SandboxInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	args := createRequestArgs(c.connectionConfig(), req)
	var opened struct {
		ID     string `json:"id"`
		Handle uint64 `json:"handle"`
	}
	if err := opCall(ctx, "sandbox.create", args, &opened); err != nil {
		return nil, err
	}
	opRelease(opened.Handle)
	return m.GetSandboxInfo(ctx, opened.ID)
}

// createRequestArgs maps the lifecycle API's create body onto `sandbox.create`
// (without the readiness wait).
func createRequestArgs(cfg ConnectionConfig, req CreateSandboxRequest) map[string]any {
	opts := SandboxCreateOptions{
		SnapshotID:       req.SnapshotID,
		TemplateID:       req.TemplateID,
		Entrypoint:       req.Entrypoint,
		ResourceLimits:   req.ResourceLimits,
		ResourceRequests: req.ResourceRequests,
		TimeoutSeconds:   req.Timeout,
		Env:              req.Env,
		SecureAccess:     req.SecureAccess,
		Metadata:         req.Metadata,
		NetworkPolicy:    req.NetworkPolicy,
		CredentialProxy:  req.CredentialProxy,
		Volumes:          req.Volumes,
		Extensions:       req.Extensions,
		Platform:         req.Platform,
		Lifecycle:        req.Lifecycle,
	}
	if req.Image != nil {
		opts.Image = req.Image.URI
		opts.ImageAuth = req.Image.Auth
	}
	return createArgs(cfg, opts, true)
}

// GetSandbox returns a sandbox's info.
func (c *LifecycleClient) GetSandbox(ctx context.Context, id string) (*SandboxInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.GetSandboxInfo(ctx, id)
}

// ListSandboxes lists sandboxes (one page).
func (c *LifecycleClient) ListSandboxes(ctx context.Context, opts ListOptions) (*ListSandboxesResponse, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.ListSandboxInfos(ctx, opts)
}

// DeleteSandbox deletes a sandbox.
func (c *LifecycleClient) DeleteSandbox(ctx context.Context, id string) error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	if c.cache != nil {
		defer c.cache.Invalidate(id)
	}
	return m.KillSandbox(ctx, id)
}

// PauseSandbox pauses a running sandbox.
func (c *LifecycleClient) PauseSandbox(ctx context.Context, id string) error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	return m.PauseSandbox(ctx, id)
}

// ResumeSandbox resumes a paused sandbox (no readiness wait).
func (c *LifecycleClient) ResumeSandbox(ctx context.Context, id string) error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	return m.ResumeSandbox(ctx, id)
}

// RenewExpiration moves a sandbox's expiration to expiresAt. The core renews by a
// duration from now, so expiresAt must lie in the future (else InvalidArgumentError);
// the server's answer carries the exact new expiration.
func (c *LifecycleClient) RenewExpiration(ctx context.Context, id string, expiresAt time.Time) (*RenewExpirationResponse, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	d := time.Until(expiresAt)
	if d <= 0 {
		return nil, &InvalidArgumentError{Field: "expiresAt", Message: "must be in the future"}
	}
	return m.RenewSandbox(ctx, id, d)
}

// GetEndpoint returns the endpoint of a port; useServerProxy (when non-nil) asks for
// a server-proxied address.
func (c *LifecycleClient) GetEndpoint(ctx context.Context, sandboxID string, port int, useServerProxy *bool) (*Endpoint, error) {
	if c.optErr != nil {
		return nil, c.optErr
	}
	cfg := c.connectionConfig()
	if useServerProxy != nil {
		cfg.UseServerProxy = *useServerProxy
	}
	fetch := func(ctx context.Context) (*Endpoint, error) {
		var out Endpoint
		args := map[string]any{"connection": cfg.sessionConnection(), "sandbox_id": sandboxID, "port": port}
		if err := opWire(ctx, "manager.get_endpoint", args, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	if c.cache == nil {
		return fetch(ctx)
	}
	key := endpointCacheKey{sandboxID: sandboxID, port: port, useServerProxy: cfg.UseServerProxy}
	// The lookup is shared by concurrent callers: it must not end with the first
	// caller's context (the core's request timeout still bounds it).
	shared := context.WithoutCancel(ctx)
	return c.cache.GetOrFetch(ctx, key, func() (*Endpoint, error) { return fetch(shared) })
}

// GetSignedEndpoint returns an endpoint carrying a signed route token that expires
// at the given Unix time (seconds).
func (c *LifecycleClient) GetSignedEndpoint(ctx context.Context, sandboxID string, port int, expires int64) (*Endpoint, error) {
	var out Endpoint
	args := map[string]any{"port": port, "expires": expires}
	if err := c.byID(ctx, "sandbox.get_signed_endpoint", sandboxID, args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchSandboxMetadata sets (non-nil) or removes (nil) metadata keys.
func (c *LifecycleClient) PatchSandboxMetadata(ctx context.Context, id string, patch MetadataPatch) (*SandboxInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.PatchSandboxMetadata(ctx, id, patch)
}

// CreateSnapshot snapshots a sandbox.
func (c *LifecycleClient) CreateSnapshot(ctx context.Context, sandboxID string, req CreateSnapshotRequest) (*SnapshotInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.CreateSnapshot(ctx, sandboxID, req)
}

// GetSnapshot returns a snapshot.
func (c *LifecycleClient) GetSnapshot(ctx context.Context, id string) (*SnapshotInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.GetSnapshot(ctx, id)
}

// ListSnapshots lists snapshots (one page).
func (c *LifecycleClient) ListSnapshots(ctx context.Context, opts ListSnapshotsOptions) (*ListSnapshotsResponse, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.ListSnapshots(ctx, opts)
}

// DeleteSnapshot deletes a snapshot.
func (c *LifecycleClient) DeleteSnapshot(ctx context.Context, id string) error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	return m.DeleteSnapshot(ctx, id)
}

// CreateTemplate declares a template (its build is asynchronous).
func (c *LifecycleClient) CreateTemplate(ctx context.Context, req CreateTemplateRequest) (*TemplateInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.CreateTemplate(ctx, req)
}

// GetTemplate returns a template with its latest build status.
func (c *LifecycleClient) GetTemplate(ctx context.Context, id string) (*TemplateInfo, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.GetTemplate(ctx, id)
}

// ListTemplates lists templates (one page).
func (c *LifecycleClient) ListTemplates(ctx context.Context, opts ListTemplatesOptions) (*ListTemplatesResponse, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	return m.ListTemplates(ctx, opts)
}

// DeleteTemplate deletes a template.
func (c *LifecycleClient) DeleteTemplate(ctx context.Context, id string) error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	return m.DeleteTemplate(ctx, id)
}

// GetNetworkPolicy returns a sandbox's egress policy (from its egress sidecar).
func (c *LifecycleClient) GetNetworkPolicy(ctx context.Context, sandboxID string) (*PolicyStatusResponse, error) {
	var out PolicyStatusResponse
	if err := c.byID(ctx, "sandbox.get_egress_status", sandboxID, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchNetworkPolicy merges rules into a sandbox's egress policy.
func (c *LifecycleClient) PatchNetworkPolicy(ctx context.Context, sandboxID string, rules []NetworkRule) (*PolicyStatusResponse, error) {
	var out PolicyStatusResponse
	if err := c.byID(ctx, "sandbox.patch_egress_rules", sandboxID, map[string]any{"rules": wireArg(rules)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteNetworkPolicyRules removes the rules of the given targets.
func (c *LifecycleClient) DeleteNetworkPolicyRules(ctx context.Context, sandboxID string, targets []string) (*PolicyStatusResponse, error) {
	var out PolicyStatusResponse
	if err := c.byID(ctx, "sandbox.delete_egress_rules", sandboxID, map[string]any{"targets": targets}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
