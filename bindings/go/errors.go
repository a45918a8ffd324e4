package opensandbox

import (
	"fmt"
	"time"
)

// Error is a failure reported by the native core that is not an HTTP error answer:
// connection failures, broken streams, timeouts, cancellation, internal errors.
// Kind is the core's stable error kind (connection, stream, timeout, cancelled,
// internal, ...). errors.Is(err, context.Canceled) holds for a call cancelled
// through its context.
type Error struct {
	Kind       string
	StatusCode int
	Code       string
	Message    string
	RequestID  string
	Operation  string
	cause      error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("opensandbox: %s: %s", e.Kind, e.Message)
	if e.Operation != "" {
		msg = fmt.Sprintf("opensandbox: %s (%s): %s", e.Kind, e.Operation, e.Message)
	}
	if e.RequestID != "" {
		msg += fmt.Sprintf(" (request_id: %s)", e.RequestID)
	}
	return msg
}

// Unwrap returns the context error of a cancelled or timed-out call, if any.
func (e *Error) Unwrap() error { return e.cause }

// ErrorKind returns the core's error kind.
func (e *Error) ErrorKind() string { return e.Kind }

// ErrorResponse is the standard error body of non-2xx responses.
type ErrorResponse struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// APIError is a non-2xx answer of the server.
type APIError struct {
	StatusCode int
	RequestID  string
	Response   ErrorResponse

	// RetryAfter is the server-suggested wait (Retry-After). The core honours it
	// itself when retrying, so it is always zero here.
	RetryAfter time.Duration

	kind string
}

// Error implements the error interface.
func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Response.Code, e.Response.Message)
	if e.RequestID != "" {
		msg += fmt.Sprintf(" (request_id: %s)", e.RequestID)
	}
	return msg
}

// IsTransient reports whether the status is one that is worth retrying.
func (e *APIError) IsTransient() bool {
	switch e.StatusCode {
	case 429, 502, 503, 504:
		return true
	}
	return false
}

// ErrorKind returns the core's error kind (api, not_found, unauthorized).
func (e *APIError) ErrorKind() string {
	if e.kind != "" {
		return e.kind
	}
	return "api"
}

// SandboxReadyTimeoutError is returned when WaitUntilReady exceeds the deadline.
type SandboxReadyTimeoutError struct {
	SandboxID string
	Elapsed   string
	LastErr   error
}

func (e *SandboxReadyTimeoutError) Error() string {
	msg := fmt.Sprintf("sandbox %s did not become ready within %s", e.SandboxID, e.Elapsed)
	if e.LastErr != nil {
		msg += fmt.Sprintf(": last error: %v", e.LastErr)
	}
	return msg
}

// Unwrap returns the last health-check error.
func (e *SandboxReadyTimeoutError) Unwrap() error { return e.LastErr }

// ErrorKind returns "ready_timeout".
func (e *SandboxReadyTimeoutError) ErrorKind() string { return "ready_timeout" }

// SandboxRunningTimeoutError is returned when a sandbox does not reach Running in
// time. The core waits for readiness through the health check instead, so this
// package never returns it; the type exists for errors.As compatibility.
type SandboxRunningTimeoutError struct {
	SandboxID string
	Elapsed   string
	LastErr   error
}

func (e *SandboxRunningTimeoutError) Error() string {
	msg := fmt.Sprintf("sandbox %s did not reach Running state within %s", e.SandboxID, e.Elapsed)
	if e.LastErr != nil {
		msg += fmt.Sprintf(": last error: %v", e.LastErr)
	}
	return msg
}

// Unwrap returns the last error.
func (e *SandboxRunningTimeoutError) Unwrap() error { return e.LastErr }

// SandboxUnhealthyError is returned when a sandbox is determined to be unhealthy.
type SandboxUnhealthyError struct {
	SandboxID string
	Reason    string
}

func (e *SandboxUnhealthyError) Error() string {
	return fmt.Sprintf("sandbox %s is unhealthy: %s", e.SandboxID, e.Reason)
}

// InvalidArgumentError is returned for invalid SDK arguments.
type InvalidArgumentError struct {
	Field   string
	Message string
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("invalid argument %q: %s", e.Field, e.Message)
}

// ErrorKind returns "invalid_argument".
func (e *InvalidArgumentError) ErrorKind() string { return "invalid_argument" }
