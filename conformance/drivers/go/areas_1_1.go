package main

// The (1.1) areas through the package's public API: templates, the credential
// vault, lifecycle hooks, isolated sessions and identity-scoped files.

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	opensandbox "github.com/alibaba/OpenSandbox/sdks/sandbox/go"
)

func init() {
	ops = append(ops,
		"manager.create_template", "manager.get_template", "manager.list_templates", "manager.delete_template",
		"credential_vault.create", "credential_vault.get", "credential_vault.patch", "credential_vault.delete",
		"credential_vault.list_credentials", "credential_vault.get_credential",
		"credential_vault.list_bindings", "credential_vault.get_binding",
		"isolation.capabilities", "isolation.create", "isolation.attach", "isolation.get", "isolation.list",
		"isolation.delete", "isolation.run", "isolation.start", "isolation.run_background",
		"isolation.run_status", "isolation.run_logs",
	)
}

// createOptions11 adds the 1.1 keys of sandbox.create to o.
func createOptions11(a args, o *opensandbox.SandboxCreateOptions) error {
	o.TemplateID = a.optStr("template_id")
	if a.has("resource_requests") {
		o.ResourceRequests = a.strMap("resource_requests")
	}
	if a.has("credential_proxy") && !a.isNull("credential_proxy") {
		var cp args
		if err := a.get("credential_proxy", &cp); err != nil {
			return err
		}
		o.CredentialProxy = &opensandbox.CredentialProxyConfig{Enabled: cp.boolean("enabled")}
	}
	if a.has("lifecycle") && !a.isNull("lifecycle") {
		var lc struct {
			PreStart *struct {
				Command        []string `json:"command"`
				TimeoutSeconds *int     `json:"timeout_seconds"`
			} `json:"pre_start"`
			Periodic []struct {
				Name           string   `json:"name"`
				Schedule       string   `json:"schedule"`
				Command        []string `json:"command"`
				TimeoutSeconds *int     `json:"timeout_seconds"`
			} `json:"periodic"`
		}
		if err := a.get("lifecycle", &lc); err != nil {
			return err
		}
		l := &opensandbox.SandboxLifecycle{}
		if p := lc.PreStart; p != nil {
			l.PreStart = &opensandbox.LifecycleHook{Command: p.Command, TimeoutSeconds: p.TimeoutSeconds}
		}
		for _, p := range lc.Periodic {
			l.Periodic = append(l.Periodic, opensandbox.PeriodicLifecycleHook{
				Name: p.Name, Schedule: p.Schedule, Command: p.Command, TimeoutSeconds: p.TimeoutSeconds})
		}
		o.Lifecycle = l
	}
	return nil
}

// snakeTree is v (a public result type) as JSON with every object key in
// snake_case: used for results without user-keyed maps (vault state, isolation).
func snakeTree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	return rekeySnake(tree), nil
}

func rekeySnake(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[snake(k)] = rekeySnake(x)
		}
		return out
	case []any:
		for i := range t {
			t[i] = rekeySnake(t[i])
		}
		return t
	}
	return v
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// decodeInto reads key k of a (op-layer snake_case) into a public request type
// whose json names are camelCase.
func decodeInto(a args, k string, out any) error {
	var raw any
	if err := a.get(k, &raw); err != nil {
		return err
	}
	b, err := json.Marshal(camelTree(raw))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func camelTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[camel(k)] = camelTree(x)
		}
		return out
	case []any:
		for i := range t {
			t[i] = camelTree(t[i])
		}
		return t
	}
	return v
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func (st *state) vaultOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	var res any
	var err error
	switch op {
	case "credential_vault.create":
		var req opensandbox.CredentialVaultCreateRequest
		if err := decodeInto(a, "credentials", &req.Credentials); err != nil {
			return nil, err
		}
		if err := decodeInto(a, "bindings", &req.Bindings); err != nil {
			return nil, err
		}
		res, err = sb.CreateCredentialVault(ctx, req)
	case "credential_vault.get":
		res, err = sb.GetCredentialVault(ctx)
	case "credential_vault.patch":
		var req opensandbox.CredentialVaultPatchRequest
		if r, ok := a.num("expected_revision"); ok {
			v := int(r)
			req.ExpectedRevision = &v
		}
		if a.has("credentials") && !a.isNull("credentials") {
			req.Credentials = &opensandbox.CredentialMutationSet{}
			if err := decodeInto(a, "credentials", req.Credentials); err != nil {
				return nil, err
			}
		}
		if a.has("bindings") && !a.isNull("bindings") {
			req.Bindings = &opensandbox.CredentialBindingMutationSet{}
			if err := decodeInto(a, "bindings", req.Bindings); err != nil {
				return nil, err
			}
		}
		res, err = sb.PatchCredentialVault(ctx, req)
	case "credential_vault.delete":
		return nil, sb.DeleteCredentialVault(ctx)
	case "credential_vault.list_credentials":
		l, e := sb.ListCredentialVaultCredentials(ctx)
		if e != nil {
			return nil, e
		}
		res = l.Credentials
	case "credential_vault.get_credential":
		res, err = sb.GetCredentialVaultCredential(ctx, a.optStr("name"))
	case "credential_vault.list_bindings":
		l, e := sb.ListCredentialVaultBindings(ctx)
		if e != nil {
			return nil, e
		}
		res = l.Bindings
	case "credential_vault.get_binding":
		res, err = sb.GetCredentialVaultBinding(ctx, a.optStr("name"))
	default:
		return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
	}
	if err != nil {
		return nil, err
	}
	return snakeTree(res)
}

func templateInfo(t *opensandbox.TemplateInfo) any {
	var readiness any
	if r := t.Readiness; r != nil {
		readiness = map[string]any{"probe": nz(r.Probe), "warmup_seconds": r.WarmupSeconds}
	}
	return map[string]any{
		"template_id": t.TemplateID, "image": t.Image, "publish": t.Publish, "format": nz(string(t.Format)),
		"status": map[string]any{"phase": string(t.Status.Phase), "manifest_ref": nz(t.Status.ManifestRef),
			"message": nz(t.Status.Message)},
		"created_at": tm(&t.CreatedAt), "updated_at": tm(&t.UpdatedAt),
		"resource_limits": t.ResourceLimits, "entrypoint": t.Entrypoint, "env": t.Env,
		"metadata": t.Metadata, "readiness": readiness,
	}
}

func (st *state) templateOp(ctx context.Context, op string, a args) (any, error) {
	m, release, err := st.mgr(a)
	if err != nil {
		return nil, err
	}
	defer release()
	switch op {
	case "manager.create_template":
		req := opensandbox.CreateTemplateRequest{
			Image: a.optStr("image"), Publish: a.optStr("publish"), Entrypoint: a.strList("entrypoint"),
			Metadata: a.strMap("metadata"), Env: a.strMap("env"), Format: opensandbox.TemplateFormat(a.optStr("format")),
		}
		if a.has("resource_limits") {
			req.ResourceLimits = a.strMap("resource_limits")
		}
		if a.has("readiness") && !a.isNull("readiness") {
			var r struct {
				Probe         string `json:"probe"`
				WarmupSeconds *int   `json:"warmup_seconds"`
			}
			if err := a.get("readiness", &r); err != nil {
				return nil, err
			}
			req.Readiness = &opensandbox.TemplateReadiness{Probe: r.Probe, WarmupSeconds: r.WarmupSeconds}
		}
		t, err := m.CreateTemplate(ctx, req)
		if err != nil {
			return nil, err
		}
		return templateInfo(t), nil
	case "manager.get_template":
		t, err := m.GetTemplate(ctx, a.optStr("template_id"))
		if err != nil {
			return nil, err
		}
		return templateInfo(t), nil
	case "manager.list_templates":
		o := opensandbox.ListTemplatesOptions{Metadata: a.strMap("metadata")}
		if p, ok := a.num("page"); ok {
			o.Page = int(p)
		}
		if p, ok := a.num("page_size"); ok {
			o.PageSize = int(p)
		}
		r, err := m.ListTemplates(ctx, o)
		if err != nil {
			return nil, err
		}
		items := []any{}
		for i := range r.Items {
			items = append(items, templateInfo(&r.Items[i]))
		}
		return map[string]any{"template_infos": items, "pagination": pagination(r.Pagination)}, nil
	case "manager.delete_template":
		return nil, m.DeleteTemplate(ctx, a.optStr("template_id"))
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

// fileTarget is the file API a files.* op runs on: the sandbox's, or one scoped to
// an identity or to an isolated session.
func fileTarget(ctx context.Context, sb *opensandbox.Sandbox, a args) (opensandbox.IdentityFilesystem, error) {
	switch {
	case a.has("identity") && !a.isNull("identity"):
		var id struct {
			UID uint32 `json:"uid"`
			GID uint32 `json:"gid"`
		}
		if err := a.get("identity", &id); err != nil {
			return nil, err
		}
		return sb.FilesWithIdentity(id.UID, id.GID)
	case a.has("isolated_session") && !a.isNull("isolated_session"):
		s, err := sb.IsolationAttach(ctx, a.optStr("isolated_session"))
		if err != nil {
			return nil, err
		}
		return s.Files(), nil
	}
	return sb, nil
}

func (st *state) isolationOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	sid := a.optStr("session_id")
	var res any
	var err error
	switch op {
	case "isolation.capabilities":
		res, err = sb.IsolationCapabilities(ctx)
	case "isolation.create":
		var req opensandbox.CreateIsolatedSessionRequest
		// The request type's json names are the wire's snake_case ones.
		b, e := json.Marshal(a)
		if e != nil {
			return nil, e
		}
		if e := json.Unmarshal(b, &req); e != nil {
			return nil, driverErr("isolation.create arguments: %v", e)
		}
		s, e := sb.IsolationCreate(ctx, req)
		if e != nil {
			return nil, e
		}
		res = s.Info()
	case "isolation.attach":
		s, e := sb.IsolationAttach(ctx, sid)
		if e != nil {
			return nil, e
		}
		res = s.Info()
	case "isolation.get":
		res, err = sb.IsolatedGet(ctx, sid)
	case "isolation.list":
		l, e := sb.IsolationListSessions(ctx)
		if e != nil {
			return nil, e
		}
		if l == nil {
			l = []opensandbox.IsolatedSessionSummary{}
		}
		res = l
	case "isolation.delete":
		return nil, sb.IsolatedDelete(ctx, sid)
	case "isolation.run", "isolation.start":
		req := opensandbox.IsolatedRunRequest{Code: a.optStr("code"), Envs: a.strMap("envs")}
		if t, ok := a.num("timeout_s"); ok {
			req.TimeoutSeconds = int(t)
		}
		if op == "isolation.start" {
			return st.start(func(ctx context.Context, r *recorder) (*opensandbox.Execution, error) {
				return sb.IsolatedRun(ctx, sid, req, r.handlers())
			}, a.boolean("handlers"), a.boolean("skip_accumulation"))
		}
		rec := newRecorder(a.boolean("handlers"), false)
		rec.skip = a.boolean("skip_accumulation")
		e, err := sb.IsolatedRun(ctx, sid, req, rec.handlers())
		if err != nil {
			return nil, err
		}
		return execution(e, rec), nil
	case "isolation.run_background":
		s, e := sb.IsolationAttach(ctx, sid)
		if e != nil {
			return nil, e
		}
		res, err = s.RunBackground(ctx, a.optStr("code"), opensandbox.IsolatedRunOpts{Envs: a.strMap("envs")})
	case "isolation.run_status":
		s, e := sb.IsolationAttach(ctx, sid)
		if e != nil {
			return nil, e
		}
		res, err = s.GetRunStatus(ctx, a.optStr("run_id"))
	case "isolation.run_logs":
		s, e := sb.IsolationAttach(ctx, sid)
		if e != nil {
			return nil, e
		}
		var cursor int64
		if c, ok := a.num("cursor"); ok {
			cursor = int64(c)
		}
		text, next, e := s.GetRunLogs(ctx, a.optStr("run_id"), cursor)
		if e != nil {
			return nil, e
		}
		return map[string]any{"text": text, "cursor": next}, nil
	default:
		return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
	}
	if err != nil {
		return nil, err
	}
	return snakeTree(res)
}
