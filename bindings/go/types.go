// Package opensandbox is a Go client for OpenSandbox, API-compatible with the official
// module github.com/alibaba/OpenSandbox/sdks/sandbox/go, running on the shared Rust
// core through its C ABI (cgo over libopensandbox_ffi.a).
package opensandbox

import (
	"time"
)

// Version of this package (the SDK family's version).
const Version = "1.1.1"

// Defaults shared by every OpenSandbox SDK.
const (
	DefaultDomain                     = "localhost:8080"
	DefaultProtocol                   = "http"
	DefaultRequestTimeout             = 30 * time.Second
	DefaultTimeoutSeconds             = 600
	DefaultReadyTimeoutSeconds        = 30
	DefaultHealthCheckPollingInterval = 200 * time.Millisecond
	DefaultExecdPort                  = 44772
	DefaultEgressPort                 = 18080
	APIVersion                        = "v1"
)

// DefaultEntrypoint is the sandbox entrypoint used when none is given.
var DefaultEntrypoint = []string{"tail", "-f", "/dev/null"}

// DefaultResourceLimits are the resource limits used when none are given.
var DefaultResourceLimits = ResourceLimits{"cpu": "1", "memory": "2Gi"}

// SandboxState is the high-level lifecycle state of a sandbox.
type SandboxState string

// Sandbox states.
const (
	StatePending    SandboxState = "Pending"
	StateRunning    SandboxState = "Running"
	StatePausing    SandboxState = "Pausing"
	StatePaused     SandboxState = "Paused"
	StateStopping   SandboxState = "Stopping"
	StateTerminated SandboxState = "Terminated"
	StateFailed     SandboxState = "Failed"
)

// SandboxStatus is the state of a sandbox with transition details.
type SandboxStatus struct {
	State            SandboxState `json:"state"`
	Reason           string       `json:"reason,omitempty"`
	Message          string       `json:"message,omitempty"`
	LastTransitionAt *time.Time   `json:"lastTransitionAt,omitempty"`
}

// ImageSpec is the container image of a sandbox.
type ImageSpec struct {
	URI  string     `json:"uri"`
	Auth *ImageAuth `json:"auth,omitempty"`
}

// ImageAuth holds registry credentials for private images.
type ImageAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// ResourceLimits are runtime resource constraints ("cpu", "memory", ...).
type ResourceLimits map[string]string

// Volume is a storage mount of a sandbox.
type Volume struct {
	Name      string `json:"name"`
	Host      *Host  `json:"host,omitempty"`
	PVC       *PVC   `json:"pvc,omitempty"`
	OSSFS     *OSSFS `json:"ossfs,omitempty"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	SubPath   string `json:"subPath,omitempty"`
}

// Host is a host path bind mount backend.
type Host struct {
	Path string `json:"path"`
}

// PVC is a platform-managed named volume backend.
type PVC struct {
	ClaimName string `json:"claimName"`
}

// OSSFS is an OSS mount backend.
type OSSFS struct {
	Bucket          string   `json:"bucket"`
	Endpoint        string   `json:"endpoint"`
	Version         string   `json:"version,omitempty"`
	Options         []string `json:"options,omitempty"`
	AccessKeyID     string   `json:"accessKeyId"`
	AccessKeySecret string   `json:"accessKeySecret"`
}

// NetworkPolicy is the egress network policy of a sandbox.
type NetworkPolicy struct {
	DefaultAction string        `json:"defaultAction,omitempty"`
	Egress        []NetworkRule `json:"egress,omitempty"`
}

// NetworkRule is one egress allow/deny rule.
type NetworkRule struct {
	Action string `json:"action"`
	Target string `json:"target"`
}

// PlatformOS is the target operating system of a platform constraint.
type PlatformOS string

// PlatformArch is the target CPU architecture of a platform constraint.
type PlatformArch string

// Platform constants.
const (
	OSLinux   PlatformOS   = "linux"
	OSWindows PlatformOS   = "windows"
	ArchAMD64 PlatformArch = "amd64"
	ArchARM64 PlatformArch = "arm64"
)

// PlatformSpec constrains the sandbox platform.
type PlatformSpec struct {
	OS   PlatformOS   `json:"os"`
	Arch PlatformArch `json:"arch"`
}

// CredentialProxyConfig switches the egress credential proxy.
type CredentialProxyConfig struct {
	Enabled bool `json:"enabled"`
}

// SandboxInfo is a sandbox as the lifecycle API returns it.
type SandboxInfo struct {
	ID         string            `json:"id"`
	Image      *ImageSpec        `json:"image,omitempty"`
	SnapshotID string            `json:"snapshotId,omitempty"`
	Status     SandboxStatus     `json:"status"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Extensions map[string]string `json:"extensions,omitempty"`
	Entrypoint []string          `json:"entrypoint"`
	ExpiresAt  *time.Time        `json:"expiresAt,omitempty"`
	CreatedAt  time.Time         `json:"createdAt"`
	Platform   *PlatformSpec     `json:"platform,omitempty"`
	// Allocation is set when the sandbox was allocated from a server-side pool.
	Allocation *AllocationSummary `json:"allocation,omitempty"`
}

// AllocationMode is how the runtime allocated a sandbox.
type AllocationMode string

// AllocationState is the confirmed allocation state of a sandbox.
type AllocationState string

// Allocation constants.
const (
	AllocationModePool       AllocationMode  = "pool"
	AllocationStateAllocated AllocationState = "allocated"
)

// AllocationSummary is a confirmed active pool allocation.
type AllocationSummary struct {
	Mode    AllocationMode  `json:"mode"`
	PoolRef string          `json:"poolRef"`
	State   AllocationState `json:"state"`
}

// LifecycleHook is a command run before the sandbox entrypoint starts.
type LifecycleHook struct {
	Command        []string `json:"command"`
	TimeoutSeconds *int     `json:"timeoutSeconds,omitempty"`
}

// PeriodicLifecycleHook is a named command scheduled while the sandbox runs.
type PeriodicLifecycleHook struct {
	Name           string   `json:"name"`
	Schedule       string   `json:"schedule"`
	Command        []string `json:"command"`
	TimeoutSeconds *int     `json:"timeoutSeconds,omitempty"`
}

// SandboxLifecycle holds the lifecycle hooks of a new sandbox.
type SandboxLifecycle struct {
	PreStart *LifecycleHook          `json:"preStart,omitempty"`
	Periodic []PeriodicLifecycleHook `json:"periodic,omitempty"`
}

// CreateSandboxRequest is the lifecycle API's create body (LifecycleClient.CreateSandbox).
type CreateSandboxRequest struct {
	Image      *ImageSpec `json:"image,omitempty"`
	SnapshotID string     `json:"snapshotId,omitempty"`
	// TemplateID creates the sandbox from a Succeeded template (exclusive with
	// Image and SnapshotID).
	TemplateID       string                 `json:"templateId,omitempty"`
	Timeout          *int                   `json:"timeout,omitempty"`
	ResourceLimits   ResourceLimits         `json:"resourceLimits"`
	ResourceRequests ResourceLimits         `json:"resourceRequests,omitempty"`
	Env              map[string]string      `json:"env,omitempty"`
	SecureAccess     bool                   `json:"secureAccess,omitempty"`
	Metadata         map[string]string      `json:"metadata,omitempty"`
	Lifecycle        *SandboxLifecycle      `json:"lifecycle,omitempty"`
	Entrypoint       []string               `json:"entrypoint,omitempty"`
	NetworkPolicy    *NetworkPolicy         `json:"networkPolicy,omitempty"`
	CredentialProxy  *CredentialProxyConfig `json:"credentialProxy,omitempty"`
	Volumes          []Volume               `json:"volumes,omitempty"`
	Extensions       map[string]string      `json:"extensions,omitempty"`
	Platform         *PlatformSpec          `json:"platform,omitempty"`
}

// RenewExpirationRequest is the body of a renewal (LifecycleClient.RenewExpiration).
type RenewExpirationRequest struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

// PaginationInfo is the pagination of list responses.
type PaginationInfo struct {
	Page        int  `json:"page"`
	PageSize    int  `json:"pageSize"`
	TotalItems  int  `json:"totalItems"`
	TotalPages  int  `json:"totalPages"`
	HasNextPage bool `json:"hasNextPage"`
}

// ListSandboxesResponse is one page of sandboxes.
type ListSandboxesResponse struct {
	Items      []SandboxInfo  `json:"items" wire:"sandbox_infos"`
	Pagination PaginationInfo `json:"pagination"`
}

// ListOptions filters ListSandboxInfos.
type ListOptions struct {
	States   []SandboxState
	Metadata map[string]string
	Page     int
	PageSize int
}

// SandboxFilter is an alias of ListOptions (the name used by newer official releases).
type SandboxFilter = ListOptions

// MetadataPatch sets (non-nil) or removes (nil) metadata keys.
type MetadataPatch map[string]*string

// Endpoint is an address of a port inside a sandbox, with the headers every request
// to it must carry.
type Endpoint struct {
	Endpoint string            `json:"endpoint"`
	Headers  map[string]string `json:"headers,omitempty"`
	// Origin is the sandbox origin reported by the server's OPEN-SANDBOX-ORIGIN
	// response header (see SandboxOrigin); empty when the server does not send it.
	Origin SandboxOrigin `json:"origin,omitempty"`
}

// SandboxOrigin is what backs a sandbox (see Endpoint.Origin).
type SandboxOrigin string

// Sandbox origins.
const (
	SandboxOriginTemplate SandboxOrigin = "template"
	SandboxOriginUnknown  SandboxOrigin = "unknown"
)

// SandboxOriginHeader is the lifecycle response header reporting the origin.
const SandboxOriginHeader = "Open-Sandbox-Origin"

// RenewExpirationResponse is the answer of a renewal.
type RenewExpirationResponse struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

// SnapshotState is the lifecycle state of a snapshot.
type SnapshotState string

// Snapshot states.
const (
	SnapshotStateCreating SnapshotState = "Creating"
	SnapshotStateDeleting SnapshotState = "Deleting"
	SnapshotStateReady    SnapshotState = "Ready"
	SnapshotStateFailed   SnapshotState = "Failed"
)

// SnapshotStatus is the state of a snapshot.
type SnapshotStatus struct {
	State            SnapshotState `json:"state"`
	Reason           string        `json:"reason,omitempty"`
	Message          string        `json:"message,omitempty"`
	LastTransitionAt *time.Time    `json:"lastTransitionAt,omitempty"`
}

// SnapshotInfo describes a snapshot.
type SnapshotInfo struct {
	ID        string         `json:"id"`
	SandboxID string         `json:"sandboxId"`
	Name      string         `json:"name,omitempty"`
	Status    SnapshotStatus `json:"status"`
	CreatedAt time.Time      `json:"createdAt"`
}

// CreateSnapshotRequest names a new snapshot.
type CreateSnapshotRequest struct {
	Name string `json:"name,omitempty"`
}

// ListSnapshotsOptions filters ListSnapshots.
type ListSnapshotsOptions struct {
	SandboxID string
	Name      string
	States    []SnapshotState
	Page      int
	PageSize  int
}

// ListSnapshotsResponse is one page of snapshots.
type ListSnapshotsResponse struct {
	Items      []SnapshotInfo `json:"items" wire:"snapshot_infos"`
	Pagination PaginationInfo `json:"pagination"`
}

// PolicyStatusResponse is the answer of the egress policy endpoints.
type PolicyStatusResponse struct {
	Status          string         `json:"status,omitempty"`
	Mode            string         `json:"mode,omitempty"`
	EnforcementMode string         `json:"enforcementMode,omitempty"`
	Reason          string         `json:"reason,omitempty"`
	Policy          *NetworkPolicy `json:"policy,omitempty"`
}

// DiagnosticContent is a sandbox's diagnostic logs or events (an extension of this
// package; the official Go SDK has no diagnostics).
type DiagnosticContent struct {
	SandboxID     string   `json:"sandboxId"`
	Kind          string   `json:"kind"`
	Scope         string   `json:"scope"`
	Delivery      string   `json:"delivery"`
	ContentType   string   `json:"contentType"`
	Truncated     bool     `json:"truncated"`
	Content       *string  `json:"content"`
	ContentURL    *string  `json:"contentUrl"`
	ContentLength *int64   `json:"contentLength"`
	ExpiresAt     *string  `json:"expiresAt"`
	Warnings      []string `json:"warnings"`
}

// CodeContext identifies a code execution context.
type CodeContext struct {
	ID       string `json:"id,omitempty"`
	Language string `json:"language"`
}

// CreateContextRequest creates a code context. Cwd is an extension of this package.
type CreateContextRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd,omitempty"`
}

// RunCodeRequest runs code, in Context when given.
type RunCodeRequest struct {
	Context *CodeContext `json:"context,omitempty"`
	Code    string       `json:"code"`
}

// Session is a bash session.
type Session struct {
	ID string `json:"session_id"`
}

// CreateSessionRequest is the optional body of a session creation.
type CreateSessionRequest struct {
	Cwd string `json:"cwd,omitempty"`
}

// RunCommandRequest runs a shell command. Timeout is in milliseconds.
type RunCommandRequest struct {
	Command string `json:"command,omitempty"`
	// Argv runs an executable with literal arguments, without a shell (exclusive
	// with Command).
	Argv       []string          `json:"argv,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
	Background bool              `json:"background,omitempty"`
	Timeout    int64             `json:"timeout,omitempty"`
	UID        *int32            `json:"uid,omitempty"`
	GID        *int32            `json:"gid,omitempty"`
	Envs       map[string]string `json:"envs,omitempty"`
}

// RunInSessionRequest runs a command in a session. Timeout is in milliseconds.
type RunInSessionRequest struct {
	Command string `json:"command"`
	Cwd     string `json:"cwd,omitempty"`
	Timeout int64  `json:"timeout,omitempty"`
}

// CommandStatusResponse is the status of a command.
type CommandStatusResponse struct {
	ID         string     `json:"id"`
	Content    string     `json:"content"`
	Running    bool       `json:"running"`
	ExitCode   *int32     `json:"exit_code,omitempty"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// CommandLogsResponse is a slice of background command output and the cursor to
// continue from.
type CommandLogsResponse struct {
	Output string
	Cursor int64
}

// FileInfo is the metadata of one file.
type FileInfo struct {
	Path       string    `json:"path"`
	Type       string    `json:"type,omitempty"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	CreatedAt  time.Time `json:"created_at"`
	Owner      string    `json:"owner"`
	Group      string    `json:"group"`
	Mode       int       `json:"mode"`
}

// Permission is file ownership and mode (octal digits as decimal, e.g. 644).
type Permission struct {
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	Mode  int    `json:"mode"`
}

// PermissionsRequest maps paths to permissions.
type PermissionsRequest map[string]Permission

// MoveItem is one rename.
type MoveItem struct {
	Src  string `json:"src"`
	Dest string `json:"dest"`
}

// MoveRequest is a list of renames.
type MoveRequest []MoveItem

// ReplaceItem is one text replacement.
type ReplaceItem struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// ReplaceRequest maps paths to replacements.
type ReplaceRequest map[string]ReplaceItem

// ReplaceResult is the outcome of a replacement in one file.
type ReplaceResult struct {
	ReplacedCount int `json:"replacedCount"`
}

// ReplaceResponse maps paths to replacement outcomes.
type ReplaceResponse map[string]ReplaceResult

// FileMetadata is the destination of an upload.
type FileMetadata struct {
	Path  string `json:"path"`
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	Mode  int    `json:"mode,omitempty"`
}

// Metrics is the resource usage of a sandbox.
type Metrics struct {
	CPUCount   float64 `json:"cpu_count"`
	CPUUsedPct float64 `json:"cpu_used_pct" wire:"cpu_used_percentage"`
	MemTotalMB float64 `json:"mem_total_mib" wire:"memory_total_in_mib"`
	MemUsedMB  float64 `json:"mem_used_mib" wire:"memory_used_in_mib"`
	Timestamp  int64   `json:"timestamp"`
}
