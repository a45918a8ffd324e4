package opensandbox_test

// The examples of the official Go SDK's README (sdks/sandbox/go/README.md), written
// out as they stand there, against this package and a real server. What differs is
// only what the README leaves to the reader: the server URL and keys (from
// scripts/with-server.sh), the execd/egress URLs (from the lifecycle API, as a
// caller would find them), `log` (the test's), and the setup the examples assume
// (a sandbox `sbx`, its id, a `config`).

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	opensandbox "example.invalid/opensandbox-sdk/go"
)

// testLog lets the README's log.Fatal / log.Fatalf calls stand unchanged.
type testLog struct{ t *testing.T }

func (l testLog) Fatal(args ...any)                 { l.t.Helper(); l.t.Fatal(args...) }
func (l testLog) Fatalf(format string, args ...any) { l.t.Helper(); l.t.Fatalf(format, args...) }

func readmeServer(t *testing.T) (lifecycleURL, apiKey string) {
	t.Helper()
	domain := os.Getenv("OPEN_SANDBOX_DOMAIN")
	if domain == "" {
		t.Skip("OPEN_SANDBOX_DOMAIN not set (run through scripts/with-server.sh)")
	}
	if !strings.Contains(domain, "://") {
		domain = "http://" + domain
	}
	return domain + "/v1", os.Getenv("OPEN_SANDBOX_API_KEY")
}

// endpointURL is the URL and headers of a sandbox port, as a caller of the
// low-level clients would look them up.
func endpointURL(t *testing.T, lc *opensandbox.LifecycleClient, id string, port int) (string, map[string]string) {
	t.Helper()
	ep, err := lc.GetEndpoint(context.Background(), id, port, nil)
	if err != nil {
		t.Fatalf("endpoint %d: %v", port, err)
	}
	u := ep.Endpoint
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	return u, ep.Headers
}

func TestReadmeCreateAndManage(t *testing.T) {
	url, key := readmeServer(t)
	log := testLog{t}
	ctx := context.Background()

	lc := opensandbox.NewLifecycleClient(url, key)

	sbx, err := lc.CreateSandbox(ctx, opensandbox.CreateSandboxRequest{
		Image:      &opensandbox.ImageSpec{URI: "python:3.12"},
		Entrypoint: []string{"/bin/sh"},
		ResourceLimits: opensandbox.ResourceLimits{
			"cpu":    "500m",
			"memory": "512Mi",
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Created sandbox: %s (state: %s)\n", sbx.ID, sbx.Status.State)

	sbx, err = lc.GetSandbox(ctx, sbx.ID)
	if err != nil {
		log.Fatal(err)
	}

	list, err := lc.ListSandboxes(ctx, opensandbox.ListOptions{
		States:   []opensandbox.SandboxState{opensandbox.StateRunning},
		PageSize: 10,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Running sandboxes: %d\n", list.Pagination.TotalItems)

	_ = lc.PauseSandbox(ctx, sbx.ID)
	_ = lc.ResumeSandbox(ctx, sbx.ID)

	_ = lc.DeleteSandbox(ctx, sbx.ID)

	// Beyond the README: the calls above really happened.
	if _, err := lc.GetSandbox(ctx, sbx.ID); err == nil {
		info, _ := lc.GetSandbox(ctx, sbx.ID)
		if info.Status.State != opensandbox.StateTerminated && info.Status.State != opensandbox.StateStopping {
			t.Fatalf("sandbox still %s after DeleteSandbox", info.Status.State)
		}
	}
}

// readmeSandbox is the sandbox the README's later examples take for granted.
func readmeSandbox(t *testing.T) (*opensandbox.Sandbox, opensandbox.ConnectionConfig, *opensandbox.LifecycleClient) {
	t.Helper()
	url, key := readmeServer(t)
	config := opensandbox.ConnectionConfig{}
	sbx, err := opensandbox.CreateSandbox(context.Background(), config, opensandbox.SandboxCreateOptions{Image: "python:3.12"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		_ = sbx.Kill(context.Background())
		_ = sbx.Close()
	})
	lc := opensandbox.NewLifecycleClient(url, key)
	t.Cleanup(func() { _ = lc.Close() })
	return sbx, config, lc
}

func TestReadmeRunCommandStreaming(t *testing.T) {
	sbx, _, lc := readmeSandbox(t)
	ctx := context.Background()
	execURL, headers := endpointURL(t, lc, sbx.ID(), opensandbox.DefaultExecdPort)
	token := headers["X-EXECD-ACCESS-TOKEN"]
	var out strings.Builder
	done := false

	exec := opensandbox.NewExecdClient(execURL, token, opensandbox.WithHeaders(headers))

	err := exec.RunCommand(ctx, opensandbox.RunCommandRequest{
		Command: "echo 'Hello from sandbox!'",
		Timeout: 30000, // milliseconds
	}, func(event opensandbox.StreamEvent) error {
		switch event.Event {
		case "stdout":
			fmt.Print(event.Data)
			out.WriteString(event.Data)
		case "stderr":
			fmt.Fprintf(os.Stderr, "%s", event.Data)
		case "execution_complete":
			fmt.Println("\n[done]")
			done = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"text":"Hello from sandbox!"`) || !done {
		t.Fatalf("events: stdout %q, complete %v", out.String(), done)
	}
	_ = exec.Close()
}

func TestReadmeSnapshots(t *testing.T) {
	sbx, config, lc := readmeSandbox(t)
	log := testLog{t}
	ctx := context.Background()
	sandboxID := sbx.ID()

	// Create a snapshot from a running sandbox, then wait until it is Ready
	mgr := opensandbox.NewSandboxManager(config)
	snap, err := mgr.CreateSnapshot(ctx, sandboxID, opensandbox.CreateSnapshotRequest{
		Name: "pre-migration",
	})
	if err != nil {
		log.Fatal(err)
	}

	info, err := mgr.GetSnapshot(ctx, snap.ID)
	for err == nil && info.Status.State == opensandbox.SnapshotStateCreating {
		select {
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
			info, err = mgr.GetSnapshot(ctx, snap.ID)
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	if info.Status.State != opensandbox.SnapshotStateReady {
		log.Fatalf("snapshot not Ready: state=%s reason=%s", info.Status.State, info.Status.Reason)
	}

	page, err := mgr.ListSnapshots(ctx, opensandbox.ListSnapshotsOptions{})

	// Restore: create a new sandbox FROM a snapshot (Image and SnapshotID are
	// mutually exclusive — set exactly one)
	restored, err := lc.CreateSandbox(ctx, opensandbox.CreateSandboxRequest{
		SnapshotID: snap.ID,
		ResourceLimits: opensandbox.ResourceLimits{
			"cpu":    "500m",
			"memory": "512Mi",
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = restored

	// Only delete the snapshot after the restore has succeeded
	_ = mgr.DeleteSnapshot(ctx, snap.ID)

	if page == nil || len(page.Items) == 0 || restored.SnapshotID != snap.ID {
		t.Fatalf("list %+v, restored %+v", page, restored)
	}
	_ = lc.DeleteSandbox(ctx, restored.ID)
	_ = mgr.Close()
}

func TestReadmeIsolatedSession(t *testing.T) {
	sbx, _, _ := readmeSandbox(t)
	log := testLog{t}
	ctx := context.Background()
	// Isolated sessions need the server on an OCI runtime (architecture.md, known
	// gaps); make test-go runs it on bubblewrap.
	if os.Getenv("WITH_SERVER_RUNTIME") != "runc" {
		t.Skip("isolated sessions need the server under runc: WITH_SERVER_RUNTIME=runc scripts/with-server.sh ...")
	}
	if caps, err := sbx.IsolationCapabilities(ctx); err != nil || !caps.Available {
		t.Fatalf("isolation not available under runc: %+v, %v", caps, err)
	}
	if _, err := sbx.RunCommand(ctx, "mkdir -p /data /workspace", nil); err != nil {
		t.Fatal(err)
	}

	shareNet := true
	session, err := sbx.IsolationCreate(ctx, opensandbox.CreateIsolatedSessionRequest{
		Workspace: opensandbox.IsolatedWorkspaceSpec{Path: "/workspace", Mode: "rw"},
		Profile:   "strict",
		// Optional bind mounts (source on host, dest inside the session)
		Binds:    []opensandbox.BindMount{{Source: "/data", Dest: "/data", ReadOnly: true}},
		ShareNet: &shareNet,
	})
	if err != nil {
		t.Fatal(err)
	}

	// Foreground run — TimeoutSeconds applies here only; background runs are
	// deliberately not time-limited
	run, err := session.Run(ctx, opensandbox.IsolatedRunRequest{
		Code:           "python -c 'print(1+1)'",
		TimeoutSeconds: 30,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range run.Stdout {
		fmt.Println(out.Text)
	}

	// Background runs: start, poll until finished, then fetch logs
	bg, err := session.RunBackground(ctx, "make build")
	if err != nil {
		t.Fatal(err)
	}
	status, err := session.GetRunStatus(ctx, bg.RunID)
	for err == nil && status.Running {
		select {
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
			status, err = session.GetRunStatus(ctx, bg.RunID)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	logs, _, err := session.GetRunLogs(ctx, bg.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if status.ExitCode == nil {
		t.Fatalf("finished background run without exit code: %+v", status)
	}
	t.Logf("background run: exit %d, logs %q", *status.ExitCode, logs)

	_ = session.Delete(ctx)
}

func TestReadmeEgressPolicy(t *testing.T) {
	sbx, _, lc := readmeSandbox(t)
	ctx := context.Background()
	egressURL, headers := endpointURL(t, lc, sbx.ID(), opensandbox.DefaultEgressPort)

	egress := opensandbox.NewEgressClient(egressURL, headers["OPENSANDBOX-EGRESS-AUTH"], opensandbox.WithHeaders(headers))

	policy, err := egress.GetPolicy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("Mode: %s, Default: %s\n", policy.Mode, policy.Policy.DefaultAction)

	updated, err := egress.PatchPolicy(ctx, []opensandbox.NetworkRule{
		{Action: "allow", Target: "api.example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := egress.GetPolicy(ctx)
	if err != nil || updated == nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range after.Policy.Egress {
		found = found || (r.Target == "api.example.com" && r.Action == "allow")
	}
	if !found {
		t.Fatalf("rule not applied: %+v", after.Policy)
	}
	_ = egress.Close()
}

func TestReadmeCredentialVault(t *testing.T) {
	_, _ = readmeServer(t)
	ctx := context.Background()
	config := opensandbox.ConnectionConfig{}
	run := func() error {
		sandbox, err := opensandbox.CreateSandbox(ctx, config, opensandbox.SandboxCreateOptions{
			Image: "python:3.11",
			NetworkPolicy: &opensandbox.NetworkPolicy{
				DefaultAction: "deny",
				Egress: []opensandbox.NetworkRule{
					{Action: "allow", Target: "api.example.com"},
				},
			},
			CredentialProxy: &opensandbox.CredentialProxyConfig{Enabled: true},
		})
		if err != nil {
			return err
		}
		defer sandbox.Kill(context.Background())

		_, err = sandbox.CreateCredentialVault(ctx, opensandbox.CredentialVaultCreateRequest{
			Credentials: []opensandbox.Credential{
				{
					Name: "api-token",
					Source: opensandbox.InlineCredentialSource{
						Type:  opensandbox.CredentialSourceInline,
						Value: "<token>",
					},
				},
			},
			Bindings: []opensandbox.CredentialBinding{
				{
					Name: "api-token",
					Match: opensandbox.CredentialMatch{
						Schemes: []opensandbox.CredentialScheme{opensandbox.CredentialSchemeHTTPS},
						Hosts:   []string{"api.example.com"},
						Paths:   []string{"/v1/*"},
					},
					Auth: opensandbox.CredentialAuth{
						Type:       opensandbox.CredentialAuthAPIKey,
						Name:       "x-api-key",
						Credential: "api-token",
					},
				},
			},
		})
		if err != nil {
			return err
		}
		// Beyond the README: the vault holds metadata, never the value.
		st, err := sandbox.GetCredentialVault(ctx)
		if err != nil {
			return err
		}
		if st.Revision != 1 || len(st.Credentials) != 1 || st.Credentials[0].SourceType != "inline" || len(st.Bindings) != 1 {
			return fmt.Errorf("vault state %+v", st)
		}
		creds, err := sandbox.ListCredentialVaultCredentials(ctx)
		if err != nil || creds.Revision != 1 || len(creds.Credentials) != 1 {
			return fmt.Errorf("credentials %+v, %v", creds, err)
		}
		return nil
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
