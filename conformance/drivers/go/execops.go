package main

// Keyed execution creation (PROTOCOL.md §2.12) through the official Go names:
// ExecdClient.GetExecutionInstance, GetExecutionOperation, CreateCommandOperation,
// CreatePTYOperation. As with the official SDK, the ExecdClient is made from the
// sandbox's execd endpoint (NewExecdClient with the endpoint's headers).

import (
	"context"
	"strings"
	"sync"
	"time"

	opensandbox "github.com/alibaba/OpenSandbox/sdks/sandbox/go"
)

func init() {
	ops = append(ops,
		"execution.get_instance", "execution.get_operation",
		"execution.create_command", "execution.create_pty",
	)
}

var (
	execdMu      sync.Mutex
	execdClients = map[*opensandbox.Sandbox]*opensandbox.ExecdClient{}
)

// execdOf is the sandbox's ExecdClient, made once from its 44772 endpoint.
func execdOf(ctx context.Context, sb *opensandbox.Sandbox) (*opensandbox.ExecdClient, error) {
	execdMu.Lock()
	defer execdMu.Unlock()
	if c := execdClients[sb]; c != nil {
		return c, nil
	}
	ep, err := sb.GetEndpoint(ctx, 44772)
	if err != nil {
		return nil, err
	}
	url := ep.Endpoint
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		url = "http://" + url
	}
	c := opensandbox.NewExecdClient(url, "", opensandbox.WithHeaders(ep.Headers))
	execdClients[sb] = c
	return c, nil
}

func operation(o *opensandbox.ExecutionOperation) map[string]any {
	return map[string]any{"id": o.ID, "kind": o.Kind, "state": o.State, "expires_at": o.ExpiresAt.Format(time.RFC3339Nano)}
}

func (st *state) executionOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	e, err := execdOf(ctx, sb)
	if err != nil {
		return nil, err
	}
	switch op {
	case "execution.get_instance":
		i, err := e.GetExecutionInstance(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"instance_id": i.InstanceID, "issued_at": i.IssuedAt,
			"retention_seconds": i.RetentionSeconds, "capacity": i.Capacity}, nil
	case "execution.get_operation":
		o, err := e.GetExecutionOperation(ctx, a.optStr("kind"), a.optStr("operation_id"))
		if err != nil {
			return nil, err
		}
		return operation(o), nil
	case "execution.create_command":
		req, err := commandRequest(a)
		if err != nil {
			return nil, err
		}
		o, err := e.CreateCommandOperation(ctx, a.optStr("operation_id"), req)
		if err != nil {
			return nil, err
		}
		return operation(o), nil
	case "execution.create_pty":
		o, err := e.CreatePTYOperation(ctx, a.optStr("operation_id"), a.optStr("cwd"), a.optStr("command"))
		if err != nil {
			return nil, err
		}
		return operation(o), nil
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}
