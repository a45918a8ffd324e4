package opensandbox

/*
#include <stdlib.h>
#include "opensandbox.h"
*/
import "C"

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
	"unsafe"
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

	mu     sync.RWMutex
	handle *C.OsbSandbox

	// The op-layer session's handle of this sandbox (session.go), 0 until first use.
	opMu sync.Mutex
	opH  uint64
}

func newSandbox(p unsafe.Pointer, config ConnectionConfig) *Sandbox {
	h := (*C.OsbSandbox)(p)
	sb := &Sandbox{id: C.GoString(C.osb_sandbox_id(h)), config: config, handle: h}
	runtime.SetFinalizer(sb, func(s *Sandbox) { _ = s.Close() })
	return sb
}

// ID returns the sandbox identifier.
func (s *Sandbox) ID() string { return s.id }

// Close releases local resources (connections). It does NOT terminate the sandbox.
// Calls after Close fail.
func (s *Sandbox) Close() error {
	s.releaseOpHandle()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handle != nil {
		C.osb_sandbox_free(s.handle)
		s.handle = nil
	}
	return nil
}

var errClosed = &Error{Kind: "invalid_argument", Message: "the sandbox handle was closed"}

// with runs f with the native handle held (read-locked, so Close waits for it).
func (s *Sandbox) with(f func(h *C.OsbSandbox) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.handle == nil {
		return errClosed
	}
	err := f(s.handle)
	runtime.KeepAlive(s)
	return err
}

// call runs a JSON sandbox op (bindings/ffi/API.md §6.3) and decodes its result. It
// blocks this goroutine's thread in the library (one thread hop less than the async
// form); ctx cancels the native call.
func (s *Sandbox) call(ctx context.Context, op string, args any, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cargs, err := marshalArgs(args)
	if err != nil {
		return err
	}
	if cargs != nil {
		defer C.free(unsafe.Pointer(cargs))
	}
	cop := C.CString(op)
	defer C.free(unsafe.Pointer(cop))
	var res *C.char
	err = s.with(func(h *C.OsbSandbox) error {
		tok, release := withCancel(ctx)
		defer release()
		var e *C.OsbError
		res = C.osb_sandbox_call_blocking(h, cop, cargs, tok, &e)
		if res == nil {
			return takeError(ctx, e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return takeJSON(unsafe.Pointer(res), out)
}

func createArgs(opts SandboxCreateOptions, skipHealth bool) map[string]any {
	a := map[string]any{"skip_health_check": skipHealth}
	if opts.Image != "" {
		a["image"] = opts.Image
	}
	if opts.ImageAuth != nil {
		a["image_auth"] = opts.ImageAuth
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
		a["network_policy"] = opts.NetworkPolicy
	}
	if opts.CredentialProxy != nil {
		a["credential_proxy"] = opts.CredentialProxy
	}
	if len(opts.Volumes) > 0 {
		a["volumes"] = opts.Volumes
	}
	if opts.Extensions != nil {
		a["extensions"] = opts.Extensions
	}
	if opts.Platform != nil {
		a["platform"] = opts.Platform
	}
	if opts.SecureAccess {
		a["secure_access"] = true
	}
	if opts.ReadyTimeout > 0 {
		a["ready_timeout_ms"] = opts.ReadyTimeout.Milliseconds()
	}
	if opts.HealthCheckInterval > 0 {
		a["health_check_polling_interval_ms"] = opts.HealthCheckInterval.Milliseconds()
	}
	return a
}

type nativeOpen func(cfg *C.OsbConfig, args *C.char, tok *C.OsbCancel, cb C.OsbCallback, ud C.uintptr_t)

func openSandbox(ctx context.Context, config ConnectionConfig, args map[string]any, open nativeOpen) (*Sandbox, error) {
	cfg, err := config.native()
	if err != nil {
		return nil, err
	}
	defer C.osb_config_free(cfg)
	cargs, err := marshalArgs(args)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cargs))
	p, err := asyncCall(ctx, func(tok *C.OsbCancel, cb C.OsbCallback, ud C.uintptr_t) {
		open(cfg, cargs, tok, cb, ud)
	})
	if err != nil {
		return nil, err
	}
	return newSandbox(p, config), nil
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
	if (opts.Image == "") == (opts.SnapshotID == "") {
		return nil, &InvalidArgumentError{Field: "Image/SnapshotID", Message: "exactly one of image or snapshotID is required"}
	}
	custom := opts.HealthCheck != nil && !opts.SkipHealthCheck
	sb, err := openSandbox(ctx, config, createArgs(opts, opts.SkipHealthCheck || custom),
		func(cfg *C.OsbConfig, args *C.char, tok *C.OsbCancel, cb C.OsbCallback, ud C.uintptr_t) {
			C.osb_sandbox_create(cfg, args, tok, cb, ud)
		})
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

func connectArgs(id string, opts []ReadyOptions) (map[string]any, *ReadyOptions, error) {
	if id == "" {
		return nil, nil, &InvalidArgumentError{Field: "sandboxID", Message: "sandbox ID is required"}
	}
	if len(opts) > 1 {
		return nil, nil, &InvalidArgumentError{Field: "opts", Message: "at most one ReadyOptions is supported"}
	}
	a := map[string]any{"sandbox_id": id, "skip_health_check": true}
	if len(opts) == 1 {
		o := opts[0]
		if o.HealthCheck != nil {
			return a, &o, nil
		}
		a["skip_health_check"] = false
		if o.Timeout > 0 {
			a["ready_timeout_ms"] = o.Timeout.Milliseconds()
		}
		if o.PollingInterval > 0 {
			a["health_check_polling_interval_ms"] = o.PollingInterval.Milliseconds()
		}
	}
	return a, nil, nil
}

func connectLike(ctx context.Context, config ConnectionConfig, id string, opts []ReadyOptions, open nativeOpen) (*Sandbox, error) {
	args, custom, err := connectArgs(id, opts)
	if err != nil {
		return nil, err
	}
	sb, err := openSandbox(ctx, config, args, open)
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
	return connectLike(ctx, config, sandboxID, opts,
		func(cfg *C.OsbConfig, args *C.char, tok *C.OsbCancel, cb C.OsbCallback, ud C.uintptr_t) {
			C.osb_sandbox_connect(cfg, args, tok, cb, ud)
		})
}

// ResumeSandbox resumes a paused sandbox and reconnects to it.
func ResumeSandbox(ctx context.Context, config ConnectionConfig, sandboxID string, opts ...ReadyOptions) (*Sandbox, error) {
	return connectLike(ctx, config, sandboxID, opts,
		func(cfg *C.OsbConfig, args *C.char, tok *C.OsbCancel, cb C.OsbCallback, ud C.uintptr_t) {
			C.osb_sandbox_resume(cfg, args, tok, cb, ud)
		})
}

// Resume resumes this sandbox and returns a new handle to it.
func (s *Sandbox) Resume(ctx context.Context, opts ...ReadyOptions) (*Sandbox, error) {
	return ResumeSandbox(ctx, s.config, s.id, opts...)
}

// Kill terminates the sandbox (irreversible).
func (s *Sandbox) Kill(ctx context.Context) error { return s.call(ctx, "kill", nil, nil) }

// Pause pauses the sandbox, keeping its state.
func (s *Sandbox) Pause(ctx context.Context) error { return s.call(ctx, "pause", nil, nil) }

// GetInfo returns the sandbox's current info.
func (s *Sandbox) GetInfo(ctx context.Context) (*SandboxInfo, error) {
	var info SandboxInfo
	if err := s.call(ctx, "get_info", nil, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PatchMetadata sets (non-nil values) or removes (nil) metadata keys.
func (s *Sandbox) PatchMetadata(ctx context.Context, patch MetadataPatch) (*SandboxInfo, error) {
	var info SandboxInfo
	if err := s.call(ctx, "patch_metadata", map[string]any{"patch": patch}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// IsHealthy reports whether the sandbox's execd answers.
func (s *Sandbox) IsHealthy(ctx context.Context) bool {
	var ok bool
	if err := s.call(ctx, "is_healthy", nil, &ok); err != nil {
		return false
	}
	return ok
}

// Ping checks that execd answers.
func (s *Sandbox) Ping(ctx context.Context) error { return s.call(ctx, "ping", nil, nil) }

// Renew sets the expiry to now + duration.
func (s *Sandbox) Renew(ctx context.Context, duration time.Duration) (*RenewExpirationResponse, error) {
	var r RenewExpirationResponse
	if err := s.call(ctx, "renew", map[string]any{"timeout_s": duration.Seconds()}, &r); err != nil {
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
	if err := s.call(ctx, "create_snapshot", args, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// GetEndpoint returns the endpoint of a port inside the sandbox.
func (s *Sandbox) GetEndpoint(ctx context.Context, port int) (*Endpoint, error) {
	var e Endpoint
	if err := s.call(ctx, "get_endpoint", map[string]any{"port": port}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// GetSignedEndpoint returns a signed endpoint that expires at the Unix time expires.
func (s *Sandbox) GetSignedEndpoint(ctx context.Context, port int, expires int64) (*Endpoint, error) {
	var e Endpoint
	if err := s.call(ctx, "get_signed_endpoint", map[string]any{"port": port, "expires": expires}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// GetMetrics returns the current resource usage.
func (s *Sandbox) GetMetrics(ctx context.Context) (*Metrics, error) {
	var m Metrics
	if err := s.call(ctx, "get_metrics", nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// GetEgressPolicy returns the egress policy status.
func (s *Sandbox) GetEgressPolicy(ctx context.Context) (*PolicyStatusResponse, error) {
	var p PolicyStatusResponse
	if err := s.call(ctx, "egress.get_policy", nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PatchEgressRules adds or replaces egress rules.
func (s *Sandbox) PatchEgressRules(ctx context.Context, rules []NetworkRule) (*PolicyStatusResponse, error) {
	var p PolicyStatusResponse
	if err := s.call(ctx, "patch_egress_rules", map[string]any{"rules": rules}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteEgressRules removes the rules of the given targets.
func (s *Sandbox) DeleteEgressRules(ctx context.Context, targets []string) (*PolicyStatusResponse, error) {
	var p PolicyStatusResponse
	if err := s.call(ctx, "delete_egress_rules", map[string]any{"targets": targets}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetDiagnosticLogs returns the sandbox's diagnostic logs (extension).
func (s *Sandbox) GetDiagnosticLogs(ctx context.Context, scope string) (*DiagnosticContent, error) {
	var d DiagnosticContent
	if err := s.call(ctx, "get_diagnostic_logs", map[string]any{"scope": scope}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// GetDiagnosticEvents returns the sandbox's diagnostic events (extension).
func (s *Sandbox) GetDiagnosticEvents(ctx context.Context, scope string) (*DiagnosticContent, error) {
	var d DiagnosticContent
	if err := s.call(ctx, "get_diagnostic_events", map[string]any{"scope": scope}, &d); err != nil {
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
		err := s.call(ctx, "wait_until_ready", map[string]any{
			"timeout_ms": timeout.Milliseconds(), "polling_interval_ms": interval.Milliseconds(),
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
