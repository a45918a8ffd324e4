package opensandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	opensandbox "example.invalid/opensandbox-sdk/go"
)

// A sandbox created from a template is template-backed (Origin), and so is a new
// handle of it (the server's OPEN-SANDBOX-ORIGIN header): its egress calls go
// through the lifecycle server and it has no credential vault. A plain sandbox's
// origin is unknown.
func TestTemplateBackedSandboxOrigin(t *testing.T) {
	_, _ = readmeServer(t)
	ctx := context.Background()
	config := opensandbox.ConnectionConfig{}
	m := opensandbox.NewSandboxManager(config)
	defer m.Close()
	tpl, err := m.CreateTemplate(ctx, opensandbox.CreateTemplateRequest{
		Image: "python:3.11", Publish: "s3://go-test/origin", Entrypoint: []string{"sleep", "infinity"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.DeleteTemplate(ctx, tpl.TemplateID) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := m.GetTemplate(ctx, tpl.TemplateID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == opensandbox.TemplatePhaseSucceeded {
			break
		}
		if got.Status.Phase == opensandbox.TemplatePhaseFailed || time.Now().After(deadline) {
			t.Fatalf("template build: %+v", got.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}

	ttl := 300
	sb, err := opensandbox.CreateSandbox(ctx, config, opensandbox.SandboxCreateOptions{
		TemplateID: tpl.TemplateID, TimeoutSeconds: &ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sb.Kill(ctx) }()
	if sb.Origin() != opensandbox.SandboxOriginTemplate {
		t.Fatalf("created from a template: origin %q", sb.Origin())
	}
	again, err := opensandbox.ConnectSandbox(ctx, config, sb.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Origin() != opensandbox.SandboxOriginTemplate {
		t.Fatalf("connected: origin %q", again.Origin())
	}
	ep, err := again.GetEndpoint(ctx, opensandbox.DefaultExecdPort)
	if err != nil || ep.Origin != opensandbox.SandboxOriginTemplate {
		t.Fatalf("endpoint origin %+v, %v", ep, err)
	}
	if _, err := again.GetEgressPolicy(ctx); err != nil {
		t.Fatalf("egress policy through /networkpolicy: %v", err)
	}
	_, err = again.GetCredentialVault(ctx)
	var invalid *opensandbox.InvalidArgumentError
	if err == nil || !errors.As(err, &invalid) {
		t.Fatalf("credential vault of a template-backed sandbox: %v", err)
	}

	plain, err := opensandbox.CreateSandbox(ctx, config, opensandbox.SandboxCreateOptions{Image: "python:3.11"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Kill(ctx) }()
	if plain.Origin() != opensandbox.SandboxOriginUnknown {
		t.Fatalf("plain sandbox: origin %q", plain.Origin())
	}
}
