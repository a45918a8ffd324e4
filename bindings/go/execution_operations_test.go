package opensandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func execdOfSandbox(t *testing.T, sb *Sandbox) *ExecdClient {
	t.Helper()
	ep, err := sb.GetEndpoint(context.Background(), 44772)
	if err != nil {
		t.Fatal(err)
	}
	e := NewExecdClient("http://"+ep.Endpoint, "", WithHeaders(ep.Headers))
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestExecutionOperationsRunOnceAndKeepTheServerCodes(t *testing.T) {
	sb := testSandbox(t)
	e := execdOfSandbox(t, sb)
	ctx := context.Background()
	inst, err := e.GetExecutionInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(inst.InstanceID) != 32 || inst.RetentionSeconds != 86400 || inst.Capacity != 4096 {
		t.Fatalf("instance %+v", inst)
	}
	id, err := inst.NewOperationID()
	if err != nil || !strings.HasPrefix(id, inst.InstanceID+".") {
		t.Fatalf("id %q %v", id, err)
	}
	req := RunCommandRequest{Command: "echo ran >> go-keyed.txt", Background: true}
	first, err := e.CreateCommandOperation(ctx, id, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Kind != "command" || first.State != "created" || first.ExpiresAt.IsZero() {
		t.Fatalf("first %+v", first)
	}
	again, err := e.CreateCommandOperation(ctx, id, req)
	if err != nil || again.ID != first.ID {
		t.Fatalf("retry %+v %v", again, err)
	}
	var api *APIError
	_, err = e.CreateCommandOperation(ctx, id, RunCommandRequest{Command: "echo other", Background: true})
	if !errors.As(err, &api) || api.StatusCode != 409 || api.Response.Code != "operation_conflict" {
		t.Fatalf("conflict: %v", err)
	}
	found, err := e.GetExecutionOperation(ctx, "command", id)
	if err != nil || found.ID != first.ID {
		t.Fatalf("lookup %+v %v", found, err)
	}
	_, err = e.GetExecutionOperation(ctx, "command", "not-an-id")
	if !errors.As(err, &api) || api.Response.Code != "invalid_operation_id" {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := e.CreateCommandOperation(ctx, "", req); err == nil {
		t.Fatal("an empty operation id must fail")
	}
	time.Sleep(500 * time.Millisecond)
	ex, err := sb.RunCommand(ctx, "wc -l < go-keyed.txt", nil)
	if err != nil || strings.TrimSpace(ex.Text()) != "1" {
		t.Fatalf("ran more than once: %+v %v", ex, err)
	}
	pid, _ := inst.NewOperationID()
	pty, err := e.CreatePTYOperation(ctx, pid, "", "")
	if err != nil || pty.Kind != "pty" || pty.ID == "" {
		t.Fatalf("pty %+v %v", pty, err)
	}
}
