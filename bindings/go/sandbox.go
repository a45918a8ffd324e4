package opensandbox

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"
)

// SandboxCreateOptions configures sandbox creation.
type SandboxCreateOptions struct {
	// Image is the container image URI (exclusive with SnapshotID).
	Image string
	// SnapshotID restores the sandbox from a snapshot (exclusive with Image).
	SnapshotID string
	// Entrypoint defaults to DefaultEntrypoint.
	Entrypoint []string
	// ResourceLimits defaults to DefaultResourceLimits.
	ResourceLimits ResourceLimits
	// TimeoutSeconds is the TTL; nil means DefaultTimeoutSeconds.
	TimeoutSeconds *int
	// Env variables of the sandbox.
	Env map[string]string
	// SecureAccess enables secured endpoint access.
	SecureAccess bool
	// Metadata for filtering and tagging.
	Metadata map[string]string
	// NetworkPolicy for egress control.
	NetworkPolicy *NetworkPolicy
	// CredentialProxy switches the egress credential proxy.
	CredentialProxy *CredentialProxyConfig
	// Volumes to mount.
	Volumes []Volume
	// ImageAuth holds registry credentials.
	ImageAuth *ImageAuth
	// ManualCleanup creates the sandbox without TTL.
	ManualCleanup bool
	// Extensions are provider-specific parameters.
	Extensions map[string]string
	// Platform constrains OS/architecture.
	Platform *PlatformSpec
	// SkipHealthCheck skips waiting for readiness.
	SkipHealthCheck bool
	// ReadyTimeout overrides DefaultReadyTimeoutSeconds.
	ReadyTimeout time.Duration
	// HealthCheckInterval overrides DefaultHealthCheckPollingInterval.
	HealthCheckInterval time.Duration
	// HealthCheck replaces the execd ping as readiness check.
	HealthCheck func(ctx context.Context, sb *Sandbox) (bool, error)
	// TemplateID creates the sandbox from a Succeeded template (exclusive with Image
	// and SnapshotID; Entrypoint and ResourceLimits may not go with it).
	TemplateID string
	// ResourceRequests are the guaranteed resources (ResourceLimits are the caps).
	ResourceRequests ResourceLimits
	// Lifecycle holds a pre-start hook and periodic hooks.
	Lifecycle *SandboxLifecycle
}

// ReadyOptions configures WaitUntilReady.
type ReadyOptions struct {
	Timeout         time.Duration
	PollingInterval time.Duration
	HealthCheck     func(ctx context.Context, sb *Sandbox) (bool, error)
}

// Sandbox is a live sandbox. Obtain one with CreateSandbox, ConnectSandbox or
// ResumeSandbox. Safe for concurrent use. Close frees local resources only.
type Sandbox struct {
	id     string
	config ConnectionConfig

	// The op-layer session's handle of this sandbox (session.go); 0 once closed.
	opMu sync.Mutex
	opH  uint64

	// owner is set on views (FilesWithIdentity, an isolated session's Files): they
	// use the owner's handle and add fileScope to every file op.
	owner     *Sandbox
	fileScope map[string]any

	// origin is what the server reported (OPEN-SANDBOX-ORIGIN) when the handle was
	// opened, or template for a sandbox created from a template.
	origin SandboxOrigin
}

// view is a Sandbox sharing s's handle whose file ops carry scope (`identity` or
// `isolated_session`, bindings/common/README.md §1).
func (s *Sandbox) view(scope map[string]any) *Sandbox {
	root := s
	if s.owner != nil {
		root = s.owner
	}
	return &Sandbox{id: s.id, config: s.config, owner: root, fileScope: scope}
}

// scopeArgs adds the view's file scope to the file ops (files.*, upload.open,
// download.open).
func (s *Sandbox) scopeArgs(op string, args map[string]any) {
	if len(s.fileScope) == 0 {
		return
	}
	if strings.HasPrefix(op, "files.") || op == "upload.open" || op == "download.open" {
		for k, v := range s.fileScope {
			args[k] = v
		}
	}
}

func newSandbox(id string, handle uint64, config ConnectionConfig) *Sandbox {
	sb := &Sandbox{id: id, config: config, opH: handle}
	runtime.SetFinalizer(sb, func(s *Sandbox) { _ = s.Close() })
	return sb
}

// ID returns the sandbox identifier.
func (s *Sandbox) ID() string { return s.id }

// Origin reports what backs this sandbox: SandboxOriginTemplate for a sandbox created
// from a template or reported as such by the server's OPEN-SANDBOX-ORIGIN header (its
// egress calls then go through the lifecycle server's /networkpolicy and it has no
// credential vault), SandboxOriginUnknown otherwise.
func (s *Sandbox) Origin() SandboxOrigin {
	if s.owner != nil {
		return s.owner.Origin()
	}
	if s.origin == SandboxOriginTemplate {
		return SandboxOriginTemplate
	}
	return SandboxOriginUnknown
}

// Close releases local resources (connections). It does NOT terminate the sandbox.
// Calls after Close fail.
func (s *Sandbox) Close() error {
	s.releaseOpHandle()
	return nil
}

var errClosed = &Error{Kind: "invalid_argument", Message: "the sandbox handle was closed"}

func secondsOf(d time.Duration) float64 { return d.Seconds() }

func createArgs(config ConnectionConfig, opts SandboxCreateOptions, skipHealth bool) map[string]any {
	a := map[string]any{"connection": config.sessionConnection(), "skip_health_check": skipHealth}
	if opts.Image != "" {
		a["image"] = opts.Image
	}
	if opts.ImageAuth != nil {
		a["image_auth"] = wireArg(opts.ImageAuth)
	}
	if opts.SnapshotID != "" {
		a["snapshot_id"] = opts.SnapshotID
	}
	if len(opts.Entrypoint) > 0 {
		a["entrypoint"] = opts.Entrypoint
	}
	if opts.ResourceLimits != nil {
		a["resource"] = opts.ResourceLimits
	}
	switch {
	case opts.ManualCleanup:
		a["timeout_s"] = nil
	case opts.TimeoutSeconds != nil:
		a["timeout_s"] = *opts.TimeoutSeconds
	}
	if opts.Env != nil {
		a["env"] = opts.Env
	}
	if opts.Metadata != nil {
		a["metadata"] = opts.Metadata
	}
	if opts.NetworkPolicy != nil {
		a["network_policy"] = wireArg(opts.NetworkPolicy)
	}
	if opts.CredentialProxy != nil {
		a["credential_proxy"] = wireArg(opts.CredentialProxy)
	}
	if len(opts.Volumes) > 0 {
		a["volumes"] = wireArg(opts.Volumes)
	}
	if opts.Extensions != nil {
		a["extensions"] = opts.Extensions
	}
	if opts.Platform != nil {
		a["platform"] = wireArg(opts.Platform)
	}
	if opts.SecureAccess {
		a["secure_access"] = true
	}
	if opts.TemplateID != "" {
		a["template_id"] = opts.TemplateID
	}
	if len(opts.ResourceRequests) > 0 {
		a["resource_requests"] = opts.ResourceRequests
	}
	if opts.Lifecycle != nil {
		a["lifecycle"] = wireArg(opts.Lifecycle)
	}
	if opts.ReadyTimeout > 0 {
		a["ready_timeout_s"] = secondsOf(opts.ReadyTimeout)
	}
	if opts.HealthCheckInterval > 0 {
		a["health_check_polling_interval_s"] = secondsOf(opts.HealthCheckInterval)
	}
	return a
}

// openSandbox runs sandbox.create / connect / resume and wraps the handle it returns.
func openSandbox(ctx context.Context, config ConnectionConfig, op string, args map[string]any) (*Sandbox, error) {
	if err := config.validateForSandbox(); err != nil {
		return nil, err
	}
	var opened struct {
		ID     string        `json:"id"`
		Handle uint64        `json:"handle"`
		Origin SandboxOrigin `json:"origin"`
	}
	if err := opCall(ctx, op, args, &opened); err != nil {
		return nil, err
	}
	sb := newSandbox(opened.ID, opened.Handle, config)
	sb.origin = opened.Origin
	return sb, nil
}

func fixReadyTimeout(err error, id string, timeout time.Duration) error {
	var rt *SandboxReadyTimeoutError
	if errors.As(err, &rt) {
		rt.SandboxID = id
		if timeout <= 0 {
			timeout = DefaultReadyTimeoutSeconds * time.Second
		}
		rt.Elapsed = timeout.String()
	}
	return err
}

// CreateSandbox creates a sandbox and waits until it is ready (unless
// SkipHealthCheck). A sandbox that never becomes ready is deleted again.
func CreateSandbox(ctx context.Context, config ConnectionConfig, opts SandboxCreateOptions) (*Sandbox, error) {
	sources := 0
	for _, v := range []string{opts.Image, opts.SnapshotID, opts.TemplateID} {
		if v != "" {
			sources++
		}
	}
	if sources != 1 {
		return nil, &InvalidArgumentError{Field: "Image/SnapshotID/TemplateID", Message: "exactly one of image, snapshotID or templateID is required"}
	}
	custom := opts.HealthCheck != nil && !opts.SkipHealthCheck
	sb, err := openSandbox(ctx, config, "sandbox.create", createArgs(config, opts, opts.SkipHealthCheck || custom))
	if err != nil {
		return nil, fixReadyTimeout(err, "", opts.ReadyTimeout)
	}
	if custom {
		ready := ReadyOptions{Timeout: opts.ReadyTimeout, PollingInterval: opts.HealthCheckInterval, HealthCheck: opts.HealthCheck}
		if err := sb.WaitUntilReady(ctx, ready); err != nil {
			_ = sb.Kill(context.Background())
			_ = sb.Close()
			return nil, err
		}
	}
	return sb, nil
}

// connectArgs are the args of sandbox.connect (timeoutKey connect_timeout_s) or
// sandbox.resume (resume_timeout_s).
func connectArgs(config ConnectionConfig, id, timeoutKey string, opts []ReadyOptions) (map[string]any, *ReadyOptions, error) {
	if id == "" {
		return nil, nil, &InvalidArgumentError{Field: "sandboxID", Message: "sandbox ID is required"}
	}
	if len(opts) > 1 {
		return nil, nil, &InvalidArgumentError{Field: "opts", Message: "at most one ReadyOptions is supported"}
	}
	a := map[string]any{"connection": config.sessionConnection(), "sandbox_id": id, "skip_health_check": true}
	if len(opts) == 1 {
		o := opts[0]
		if o.HealthCheck != nil {
			return a, &o, nil
		}
		a["skip_health_check"] = false
		if o.Timeout > 0 {
			a[timeoutKey] = secondsOf(o.Timeout)
		}
		if o.PollingInterval > 0 {
			a["health_check_polling_interval_s"] = secondsOf(o.PollingInterval)
		}
	}
	return a, nil, nil
}

func connectLike(ctx context.Context, config ConnectionConfig, id string, opts []ReadyOptions, op, timeoutKey string) (*Sandbox, error) {
	args, custom, err := connectArgs(config, id, timeoutKey, opts)
	if err != nil {
		return nil, err
	}
	sb, err := openSandbox(ctx, config, op, args)
	if err != nil {
		var timeout time.Duration
		if len(opts) == 1 {
			timeout = opts[0].Timeout
		}
		return nil, fixReadyTimeout(err, id, timeout)
	}
	if custom != nil {
		if err := sb.WaitUntilReady(ctx, *custom); err != nil {
			_ = sb.Close()
			return nil, err
		}
	}
	return sb, nil
}

// ConnectSandbox connects to an existing sandbox. With ReadyOptions it also waits
// until the sandbox is ready.
func ConnectSandbox(ctx context.Context, config ConnectionConfig, sandboxID string, opts ...ReadyOptions) (*Sandbox, error) {
	return connectLike(ctx, config, sandboxID, opts, "sandbox.connect", "connect_timeout_s")
}

// ResumeSandbox resumes a paused sandbox and reconnects to it.
func ResumeSandbox(ctx context.Context, config ConnectionConfig, sandboxID string, opts ...ReadyOptions) (*Sandbox, error) {
	return connectLike(ctx, config, sandboxID, opts, "sandbox.resume", "resume_timeout_s")
}

// Resume resumes this sandbox and returns a new handle to it.
func (s *Sandbox) Resume(ctx context.Context, opts ...ReadyOptions) (*Sandbox, error) {
	return ResumeSandbox(ctx, s.config, s.id, opts...)
}

// Kill terminates the sandbox (irreversible).
func (s *Sandbox) Kill(ctx context.Context) error { return s.op(ctx, "sandbox.kill", nil, nil) }

// Pause pauses the sandbox, keeping its state.
func (s *Sandbox) Pause(ctx context.Context) error { return s.op(ctx, "sandbox.pause", nil, nil) }

// GetInfo returns the sandbox's current info.
func (s *Sandbox) GetInfo(ctx context.Context) (*SandboxInfo, error) {
	var info SandboxInfo
	if err := s.opW(ctx, "sandbox.get_info", nil, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PatchMetadata sets (non-nil values) or removes (nil) metadata keys.
func (s *Sandbox) PatchMetadata(ctx context.Context, patch MetadataPatch) (*SandboxInfo, error) {
	var info SandboxInfo
	if err := s.opW(ctx, "sandbox.patch_metadata", map[string]any{"patch": patch}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// IsHealthy reports whether the sandbox's execd answers.
func (s *Sandbox) IsHealthy(ctx context.Context) bool {
	var r struct {
		Healthy bool `json:"healthy"`
	}
	if err := s.op(ctx, "sandbox.is_healthy", nil, &r); err != nil {
		return false
	}
	return r.Healthy
}

// Ping checks that execd answers.
func (s *Sandbox) Ping(ctx context.Context) error { return s.op(ctx, "sandbox.ping", nil, nil) }

// Renew sets the expiry to now + duration.
func (s *Sandbox) Renew(ctx context.Context, duration time.Duration) (*RenewExpirationResponse, error) {
	var r RenewExpirationResponse
	if err := s.opW(ctx, "sandbox.renew", map[string]any{"seconds": duration.Seconds()}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CreateSnapshot creates a snapshot of this sandbox.
func (s *Sandbox) CreateSnapshot(ctx context.Context, req CreateSnapshotRequest) (*SnapshotInfo, error) {
	args := map[string]any{}
	if req.Name != "" {
		args["name"] = req.Name
	}
	var info SnapshotInfo
	if err := s.opW(ctx, "sandbox.create_snapshot", args, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// GetEndpoint returns the endpoint of a port inside the sandbox.
func (s *Sandbox) GetEndpoint(ctx context.Context, port int) (*Endpoint, error) {
	var e Endpoint
	if err := s.opW(ctx, "sandbox.get_endpoint", map[string]any{"port": port}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// GetSignedEndpoint returns a signed endpoint that expires at the Unix time expires.
func (s *Sandbox) GetSignedEndpoint(ctx context.Context, port int, expires int64) (*Endpoint, error) {
	var e Endpoint
	if err := s.opW(ctx, "sandbox.get_signed_endpoint", map[string]any{"port": port, "expires": expires}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// GetMetrics returns the current resource usage.
func (s *Sandbox) GetMetrics(ctx context.Context) (*Metrics, error) {
	var m Metrics
	if err := s.opW(ctx, "sandbox.get_metrics", nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// GetEgressPolicy returns the egress policy status.
func (s *Sandbox) GetEgressPolicy(ctx context.Context) (*PolicyStatusResponse, error) {
	var p PolicyStatusResponse
	if err := s.opW(ctx, "sandbox.get_egress_status", nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PatchEgressRules adds or replaces egress rules.
func (s *Sandbox) PatchEgressRules(ctx context.Context, rules []NetworkRule) (*PolicyStatusResponse, error) {
	var p PolicyStatusResponse
	if err := s.opW(ctx, "sandbox.patch_egress_rules", map[string]any{"rules": wireArg(rules)}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteEgressRules removes the rules of the given targets.
func (s *Sandbox) DeleteEgressRules(ctx context.Context, targets []string) (*PolicyStatusResponse, error) {
	var p PolicyStatusResponse
	if err := s.opW(ctx, "sandbox.delete_egress_rules", map[string]any{"targets": targets}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetDiagnosticLogs returns the sandbox's diagnostic logs (extension).
func (s *Sandbox) GetDiagnosticLogs(ctx context.Context, scope string) (*DiagnosticContent, error) {
	var d DiagnosticContent
	if err := s.opW(ctx, "sandbox.get_diagnostic_logs", map[string]any{"scope": scope}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// GetDiagnosticEvents returns the sandbox's diagnostic events (extension).
func (s *Sandbox) GetDiagnosticEvents(ctx context.Context, scope string) (*DiagnosticContent, error) {
	var d DiagnosticContent
	if err := s.opW(ctx, "sandbox.get_diagnostic_events", map[string]any{"scope": scope}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// WaitUntilReady polls until the sandbox is ready or the timeout expires
// (*SandboxReadyTimeoutError). Without HealthCheck it pings execd.
func (s *Sandbox) WaitUntilReady(ctx context.Context, opts ReadyOptions) error {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeoutSeconds * time.Second
	}
	interval := opts.PollingInterval
	if interval <= 0 {
		interval = DefaultHealthCheckPollingInterval
	}
	if opts.HealthCheck == nil {
		err := s.op(ctx, "sandbox.wait_until_ready", map[string]any{
			"timeout_s": timeout.Seconds(), "polling_interval_s": interval.Seconds(),
		}, nil)
		return fixReadyTimeout(err, s.id, timeout)
	}
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		healthy, err := opts.HealthCheck(ctx, s)
		if err != nil {
			lastErr = err
		}
		if healthy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
	return &SandboxReadyTimeoutError{SandboxID: s.id, Elapsed: timeout.String(), LastErr: lastErr}
}
