package opensandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every op and argument key this package sends to the op layer must exist in its
// manifest (osb_ops_manifest), so that a misspelt key fails here, not for a user.

type manifestOp struct {
	Name string `json:"name"`
	Args []struct {
		Name string `json:"name"`
	} `json:"args"`
}

func loadManifest(t testing.TB) map[string]map[string]bool {
	text, err := opsManifest()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Ops []manifestOp `json:"ops"`
	}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	ops := map[string]map[string]bool{}
	for _, op := range m.Ops {
		keys := map[string]bool{}
		for _, a := range op.Args {
			keys[a.Name] = true
		}
		ops[op.Name] = keys
	}
	return ops
}

// checkArgs returns the problems of one op call against the manifest.
func checkArgs(ops map[string]map[string]bool, op string, args map[string]any) []string {
	keys, ok := ops[op]
	if !ok {
		return []string{fmt.Sprintf("op %q is not in the manifest", op)}
	}
	var bad []string
	for k, v := range args {
		if !keys[k] {
			bad = append(bad, fmt.Sprintf("%s: key %q is not in the manifest", op, k))
		}
		if conn, ok := v.(map[string]any); ok && k == "connection" {
			for ck := range conn {
				if !ops["config.new"][ck] {
					bad = append(bad, fmt.Sprintf("%s: connection key %q is not in the manifest (config.new)", op, ck))
				}
			}
		}
	}
	return bad
}

var traced struct {
	mu   sync.Mutex
	seen map[string]map[string]any
}

// TestMain records every op the tests send and checks them all against the manifest.
func TestMain(m *testing.M) {
	traced.seen = map[string]map[string]any{}
	opTrace = func(op string, args map[string]any) {
		traced.mu.Lock()
		defer traced.mu.Unlock()
		merged := traced.seen[op]
		if merged == nil {
			merged = map[string]any{}
			traced.seen[op] = merged
		}
		for k, v := range args {
			merged[k] = v
		}
	}
	code := m.Run()
	if code == 0 {
		ops := loadManifest(nil2{})
		var bad []string
		traced.mu.Lock()
		for op, args := range traced.seen {
			bad = append(bad, checkArgs(ops, op, args)...)
		}
		traced.mu.Unlock()
		sort.Strings(bad)
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, "manifest:", b)
		}
		if len(bad) > 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// nil2 is a testing.TB stand-in for TestMain (fails by panicking).
type nil2 struct{ testing.TB }

func (nil2) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// The arguments of every op the public API sends, with every optional field set, are
// known to the manifest (no server needed).
func TestOpArgumentsAreInTheManifest(t *testing.T) {
	ops := loadManifest(t)
	var uid, gid int32 = 1, 2
	timeout := 60
	cfg := ConnectionConfig{Domain: "h:1", APIKey: "k", Headers: map[string]string{"X": "1"}, UseServerProxy: true}
	calls := []struct {
		op   string
		args map[string]any
	}{
		{"sandbox.create", createArgs(cfg, SandboxCreateOptions{Image: "i", ImageAuth: &ImageAuth{Username: "u", Password: "p"}, Entrypoint: []string{"e"},
			ResourceLimits: ResourceLimits{"cpu": "1"}, TimeoutSeconds: &timeout, Env: map[string]string{"A": "b"}, SecureAccess: true,
			Metadata: map[string]string{"m": "1"}, NetworkPolicy: &NetworkPolicy{DefaultAction: "deny", Egress: []NetworkRule{{Action: "allow", Target: "x"}}},
			CredentialProxy: &CredentialProxyConfig{Enabled: true}, Extensions: map[string]string{"x": "1"}, Platform: &PlatformSpec{OS: "linux", Arch: "amd64"},
			Volumes:      []Volume{{Name: "v", MountPath: "/v", ReadOnly: true, SubPath: "s", PVC: &PVC{ClaimName: "c"}}},
			ReadyTimeout: time.Second, HealthCheckInterval: time.Second}, false)},
		{"sandbox.connect", mustConnectArgs(t, cfg, "connect_timeout_s")},
		{"sandbox.resume", mustConnectArgs(t, cfg, "resume_timeout_s")},
		{"sandbox.wait_until_ready", map[string]any{"sandbox": 1, "timeout_s": 1.0, "polling_interval_s": 0.1}},
		{"commands.start", withRun(RunCommandRequest{Command: "c", Background: true, Cwd: "/", Timeout: 5, UID: &uid, GID: &gid, Envs: map[string]string{"A": "b"}}.args())},
		{"commands.start_in_session", withRun(sessionRunArgs("s", RunInSessionRequest{Command: "c", Cwd: "/", Timeout: 5}))},
		{"code.start", withRun(codeRunArgs(RunCodeRequest{Code: "1", Context: &CodeContext{ID: "i", Language: "python"}}))},
		{"sandbox.create", createArgs(cfg, SandboxCreateOptions{TemplateID: "t", ResourceRequests: ResourceLimits{"cpu": "1"},
			Lifecycle: &SandboxLifecycle{PreStart: &LifecycleHook{Command: []string{"true"}, TimeoutSeconds: &timeout},
				Periodic: []PeriodicLifecycleHook{{Name: "p", Schedule: "@every 1s", Command: []string{"true"}, TimeoutSeconds: &timeout}}}}, true)},
		{"sandbox.create", createRequestArgs(cfg, CreateSandboxRequest{Image: &ImageSpec{URI: "i", Auth: &ImageAuth{Username: "u"}},
			ResourceRequests: ResourceLimits{"cpu": "1"}, Timeout: &timeout})},
		{"sandbox.open_endpoints", directArgs(NewClient("http://h:1", "tok", execdAuthHeader, WithTimeout(time.Second),
			WithRetry(DefaultRetryConfig()), WithHeaders(map[string]string{"X": "1"})), true)},
		{"manager.create_template", withManager(templateArgs(CreateTemplateRequest{Image: "i", Publish: "p", ResourceLimits: ResourceLimits{"cpu": "1"},
			Entrypoint: []string{"e"}, Metadata: map[string]string{"m": "1"}, Env: map[string]string{"E": "1"},
			Readiness: &TemplateReadiness{Probe: "tcp://x", WarmupSeconds: &timeout}, Format: TemplateFormatNative}))},
		{"isolation.create", withSandbox(isolationCreateArgs(fullIsolationRequest()))},
		{"isolation.start", withRun(isolationRunArgs("s", IsolatedRunRequest{Code: "c", Envs: map[string]string{"A": "1"}, TimeoutSeconds: 3}))},
		{"credential_vault.create", withSandbox(vaultArgs(CredentialVaultCreateRequest{Credentials: []Credential{{Name: "c", Source: InlineCredentialSource{Value: "v"}}}}))},
		{"credential_vault.patch", withSandbox(vaultArgs(CredentialVaultPatchRequest{ExpectedRevision: &timeout,
			Credentials: &CredentialMutationSet{Delete: []string{"c"}}, Bindings: &CredentialBindingMutationSet{Delete: []string{"b"}}}))},
		{"commands.set_env", withSandbox(map[string]any{"key": "K", "value": "v"})},
		{"execution.next_batch", map[string]any{"handle": 1}},
		{"release", map[string]any{"handle": 1}},
	}
	for _, c := range calls {
		for _, b := range checkArgs(ops, c.op, c.args) {
			t.Error(b)
		}
	}
	// A misspelt key is caught.
	if len(checkArgs(ops, "commands.start", map[string]any{"comand": "x"})) == 0 {
		t.Fatal("a misspelt key passed the check")
	}
}

func withSandbox(a map[string]any) map[string]any {
	a["sandbox"] = 1
	return a
}

func withManager(a map[string]any) map[string]any {
	a["manager"] = 1
	return a
}

func fullIsolationRequest() CreateIsolatedSessionRequest {
	yes := true
	var id uint32 = 1000
	return CreateIsolatedSessionRequest{Workspace: IsolatedWorkspaceSpec{Path: "/w", Mode: "rw"},
		Overlays: []IsolatedOverlaySpec{{Path: "/o", Mode: "overlay", Persist: &yes}}, Profile: "strict",
		ExtraWritable: []string{"/x"}, Binds: []BindMount{{Source: "/a", Dest: "/b", ReadOnly: true}}, ShareNet: &yes,
		EnvPassthrough: &EnvPassthroughSpec{Mode: "allow", Keys: []string{"K"}}, Uid: &id, Gid: &id, UidMode: "setpriv",
		IdleTimeoutSeconds: 5}
}

func withRun(a map[string]any) map[string]any {
	a["sandbox"] = 1
	a["handlers"] = true
	a["skip_accumulation"] = true
	return a
}

func mustConnectArgs(t *testing.T, cfg ConnectionConfig, key string) map[string]any {
	a, _, err := connectArgs(cfg, "x", key, []ReadyOptions{{Timeout: time.Second, PollingInterval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Public types travel in the op layer's dialect: nested keys of create arguments are
// snake_case too (the layer rejects unknown keys), and results are read back.
func TestWireDialect(t *testing.T) {
	v := wireArg([]Volume{{Name: "v", MountPath: "/v", OSSFS: &OSSFS{Bucket: "b", AccessKeyID: "k"}}}).([]any)[0].(map[string]any)
	if v["mount_path"] != "/v" || v["ossfs"].(map[string]any)["access_key_id"] != "k" {
		t.Fatalf("volume: %v", v)
	}
	var info ListSandboxesResponse
	raw := `{"sandbox_infos":[{"id":"a","status":{"state":"Running","last_transition_at":"2026-01-02T03:04:05Z"},
		"metadata":{"snake_key":"1"},"created_at":"2026-01-02T03:04:05Z","entrypoint":["x"]}],
		"pagination":{"page":1,"page_size":10,"total_items":1,"total_pages":1,"has_next_page":false}}`
	if err := (&wireOut{&info}).UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	if len(info.Items) != 1 || info.Items[0].Metadata["snake_key"] != "1" || info.Items[0].Status.LastTransitionAt == nil ||
		info.Pagination.PageSize != 10 || info.Items[0].CreatedAt.Year() != 2026 {
		t.Fatalf("decoded: %+v", info)
	}
	var m Metrics
	if err := (&wireOut{&m}).UnmarshalJSON([]byte(`{"type":"metrics","cpu_count":2,"cpu_used_percentage":1.5,"memory_total_in_mib":512,"memory_used_in_mib":3,"timestamp":9}`)); err != nil {
		t.Fatal(err)
	}
	if m.CPUCount != 2 || m.CPUUsedPct != 1.5 || m.MemTotalMB != 512 || m.Timestamp != 9 {
		t.Fatalf("metrics: %+v", m)
	}
}

// Nested keys (the manifest lists top-level ones only) are checked by the op layer's
// parser, which runs before anything else: with a handle that does not exist, a call
// whose every key parses fails on the handle, never on an unknown field.
func TestNestedArgumentsParse(t *testing.T) {
	const noHandle = 987654321
	yes := true
	n := 5
	full := CredentialBinding{Name: "b", Match: CredentialMatch{Schemes: []CredentialScheme{CredentialSchemeHTTPS}, Ports: []int{443},
		Hosts: []string{"h"}, Methods: []string{"GET"}, Paths: []string{"/*"}},
		Auth: CredentialAuth{Type: CredentialAuthCustomHeaders, Credential: "c", Name: "n", Headers: []CustomHeaderEntry{{Name: "X", Credential: "c"}},
			Substitutions: []CredentialSubstitution{{Credential: "c", Placeholder: "__C__", In: []CredentialSubstitutionSurface{CredentialSubstitutionQuery}}}}}
	cred := Credential{Name: "c", Source: InlineCredentialSource{Value: "v"}}
	calls := map[string]map[string]any{
		"isolation.create": withHandle(isolationCreateArgs(fullIsolationRequest()), "sandbox", noHandle),
		"credential_vault.create": withHandle(vaultArgs(CredentialVaultCreateRequest{Credentials: []Credential{cred},
			Bindings: []CredentialBinding{full}}), "sandbox", noHandle),
		"credential_vault.patch": withHandle(vaultArgs(CredentialVaultPatchRequest{ExpectedRevision: &n,
			Credentials: &CredentialMutationSet{Add: []Credential{cred}, Replace: []Credential{cred}, Delete: []string{"x"}},
			Bindings:    &CredentialBindingMutationSet{Add: []CredentialBinding{full}, Replace: []CredentialBinding{full}, Delete: []string{"y"}}}), "sandbox", noHandle),
		"manager.create_template": withHandle(templateArgs(CreateTemplateRequest{Image: "i", Publish: "p",
			Readiness: &TemplateReadiness{Probe: "tcp://x", WarmupSeconds: &n}, ResourceLimits: ResourceLimits{"cpu": "1"}}), "manager", noHandle),
		"sandbox.create": withHandle(createArgs(ConnectionConfig{Domain: "127.0.0.1:9"}, SandboxCreateOptions{Image: "i",
			Lifecycle: &SandboxLifecycle{PreStart: &LifecycleHook{Command: []string{"true"}, TimeoutSeconds: &n},
				Periodic: []PeriodicLifecycleHook{{Name: "p", Schedule: "@every 1s", Command: []string{"true"}, TimeoutSeconds: &n}}},
			CredentialProxy: &CredentialProxyConfig{Enabled: yes}, ResourceRequests: ResourceLimits{"cpu": "1"}}, true), "connection", 0),
	}
	// The check catches a misspelt nested key.
	bad := map[string]any{"sandbox": noHandle, "workspace": map[string]any{"paht": "/w"}}
	if err := opCall(context.Background(), "isolation.create", bad, nil); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("a misspelt nested key was not caught: %v", err)
	}
	for op, args := range calls {
		err := opCall(context.Background(), op, args, nil)
		if err == nil {
			t.Fatalf("%s: succeeded against nothing", op)
		}
		if strings.Contains(err.Error(), "unknown field") || strings.Contains(err.Error(), "invalid type") || strings.Contains(err.Error(), "missing field") {
			t.Errorf("%s: %v", op, err)
		}
	}
}

// withHandle sets key to h (0: leave args as they are).
func withHandle(a map[string]any, key string, h int) map[string]any {
	if h != 0 {
		a[key] = h
	}
	return a
}
