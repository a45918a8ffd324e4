package opensandbox

import "fmt"

// PoolEmptyError: Acquire found no idle sandbox under a policy that does not create.
type PoolEmptyError struct {
	PoolName string
	Policy   AcquirePolicy
}

func (e *PoolEmptyError) Error() string {
	return fmt.Sprintf("opensandbox: pool %q is empty (policy=%s)", e.PoolName, e.Policy)
}

// PoolAcquireFailedError: Acquire took idle candidates but none connected healthy,
// under a policy that does not create.
type PoolAcquireFailedError struct {
	PoolName string
	Cause    error
}

func (e *PoolAcquireFailedError) Error() string {
	return fmt.Sprintf("opensandbox: pool %q acquire failed: %v", e.PoolName, e.Cause)
}

func (e *PoolAcquireFailedError) Unwrap() error { return e.Cause }

// PoolNotRunningError: the operation needs a RUNNING pool.
type PoolNotRunningError struct {
	PoolName string
	State    PoolLifecycleState
}

func (e *PoolNotRunningError) Error() string {
	return fmt.Sprintf("opensandbox: pool %q is not running (state=%s)", e.PoolName, e.State)
}

// PoolStateStoreUnavailableError: the state store could not be reached.
type PoolStateStoreUnavailableError struct {
	Operation string
	Cause     error
}

func (e *PoolStateStoreUnavailableError) Error() string {
	return fmt.Sprintf("opensandbox: pool state store unavailable in %s: %v", e.Operation, e.Cause)
}

func (e *PoolStateStoreUnavailableError) Unwrap() error { return e.Cause }

// PoolDestroyedError: the namespace is fenced (DESTROYING) or tombstoned (DESTROYED).
type PoolDestroyedError struct {
	PoolName string
	State    PoolDestroyState
}

func (e *PoolDestroyedError) Error() string {
	return fmt.Sprintf("opensandbox: pool %q is %s", e.PoolName, e.State)
}

// PoolDestroyIncompleteError: a destroy could not finish; the namespace stays
// DESTROYING and Destroy may be retried.
type PoolDestroyIncompleteError struct {
	PoolName string
	Reason   string
	Cause    error
}

func (e *PoolDestroyIncompleteError) Error() string {
	if e.Cause == nil {
		return fmt.Sprintf("opensandbox: pool %q destroy incomplete: %s", e.PoolName, e.Reason)
	}
	return fmt.Sprintf("opensandbox: pool %q destroy incomplete: %s: %v", e.PoolName, e.Reason, e.Cause)
}

func (e *PoolDestroyIncompleteError) Unwrap() error { return e.Cause }
