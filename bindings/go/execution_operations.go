package opensandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ExecutionInstance identifies one execd lifetime and its bounded recovery window
// (official: ExecutionInstance). An operation id is
// "<InstanceID>.<IssuedAt>.<token>".
type ExecutionInstance struct {
	InstanceID       string `json:"instance_id"`
	IssuedAt         int64  `json:"issued_at"`
	RetentionSeconds int64  `json:"retention_seconds"`
	Capacity         int    `json:"capacity"`
}

// NewOperationID creates a caller identity. Persist it BEFORE calling a create
// method; never regenerate it on recovery, expiry or an instance mismatch.
func (i ExecutionInstance) NewOperationID() (string, error) {
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.%d.%s", i.InstanceID, i.IssuedAt, hex.EncodeToString(token[:])), nil
}

// ExecutionOperation reports creation only (State "creating", "created" or
// "failed"), never command completion or success (official: ExecutionOperation).
type ExecutionOperation struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	State     string    `json:"state"`
	ExpiresAt time.Time `json:"expires_at"`
}

// executionInstanceCache keeps the last instance for a minute, as the official
// client does; an instance mismatch or an expired id drops it.
type executionInstanceCache struct {
	mu      sync.Mutex
	value   ExecutionInstance
	expires time.Time
}

func (e *ExecdClient) instanceCache() *executionInstanceCache {
	return &e.instances
}

func (e *ExecdClient) invalidateOperationInstance(err error) {
	var apiError *APIError
	if errors.As(err, &apiError) && (apiError.Response.Code == "operation_instance_mismatch" || apiError.Response.Code == "operation_expired") {
		c := e.instanceCache()
		c.mu.Lock()
		c.expires = time.Time{}
		c.mu.Unlock()
	}
}

// GetExecutionInstance returns the execd lifetime (GET /execution/instance),
// reusing a snapshot for at most one minute. Call it for each new operation;
// recovery must load the previously persisted id instead.
func (e *ExecdClient) GetExecutionInstance(ctx context.Context) (*ExecutionInstance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := e.instanceCache()
	c.mu.Lock()
	if time.Now().Before(c.expires) {
		v := c.value
		c.mu.Unlock()
		return &v, nil
	}
	c.mu.Unlock()
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	started := time.Now()
	var out ExecutionInstance
	if err := sb.op(ctx, "execution.get_instance", map[string]any{}, &out); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.value, c.expires = out, started.Add(time.Minute)
	c.mu.Unlock()
	return &out, nil
}

// GetExecutionOperation looks a keyed creation up by its saved id (kind "command"
// or "pty"; GET /execution/operation).
func (e *ExecdClient) GetExecutionOperation(ctx context.Context, kind, operationID string) (*ExecutionOperation, error) {
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	var out ExecutionOperation
	err = sb.op(ctx, "execution.get_operation", map[string]any{"kind": kind, "operation_id": operationID}, &out)
	e.invalidateOperationInstance(err)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateCommandOperation starts request at most once for operationID (POST
// /command/operations): a JSON acknowledgement, no event stream. Reuse exactly the
// same id and request after a lost response; poll status with the result's ID.
func (e *ExecdClient) CreateCommandOperation(ctx context.Context, operationID string, request RunCommandRequest) (*ExecutionOperation, error) {
	if operationID == "" {
		return nil, fmt.Errorf("opensandbox: operation identity is required")
	}
	if err := request.validate(); err != nil {
		return nil, err
	}
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	args := request.args()
	args["operation_id"] = operationID
	var out ExecutionOperation
	err = sb.op(ctx, "execution.create_command", args, &out)
	e.invalidateOperationInstance(err)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// CreatePTYOperation creates (or recovers) a dormant PTY session at most once for
// operationID (POST /pty/operations). Connect its ID with the PTY WebSocket
// protocol; this call does not start a shell.
func (e *ExecdClient) CreatePTYOperation(ctx context.Context, operationID, cwd, command string) (*ExecutionOperation, error) {
	if operationID == "" {
		return nil, fmt.Errorf("opensandbox: operation identity is required")
	}
	sb, err := e.sandbox()
	if err != nil {
		return nil, err
	}
	args := map[string]any{"operation_id": operationID}
	if cwd != "" {
		args["cwd"] = cwd
	}
	if command != "" {
		args["command"] = command
	}
	var out ExecutionOperation
	err = sb.op(ctx, "execution.create_pty", args, &out)
	e.invalidateOperationInstance(err)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
