// Command opensandbox-conformance-go is the Go driver of the conformance suite
// (conformance/PROTOCOL.md): it turns protocol requests into calls of the Go
// module's public API and reports what it observed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	opensandbox "github.com/alibaba/OpenSandbox/sdks/sandbox/go"
)

type request struct {
	ID   json.RawMessage `json:"id"`
	Op   string          `json:"op"`
	Args args            `json:"args"`
}

// failure is a driver-side error (bad arguments, unknown op).
type failure struct {
	kind string
	msg  string
}

func (f *failure) Error() string { return f.msg }

func driverErr(format string, a ...any) error {
	return &failure{kind: "driver_error", msg: fmt.Sprintf(format, a...)}
}

type runResult struct {
	value any
	err   error
}

type state struct {
	sandboxes map[string]*opensandbox.Sandbox
	contexts  map[string]opensandbox.CodeContext
	runs      map[string]chan runResult
	cancels   map[string]context.CancelFunc
	next      int
	manager   *opensandbox.SandboxManager
	ptys      map[string]*opensandbox.PtyConn
	pools     map[string]*pooled
}

var ops = []string{
	"sandbox.create", "sandbox.connect", "sandbox.resume", "sandbox.get_info", "sandbox.is_healthy",
	"sandbox.renew", "sandbox.patch_metadata", "sandbox.pause", "sandbox.kill", "sandbox.get_endpoint",
	"sandbox.get_metrics", "sandbox.create_snapshot", "sandbox.get_egress_policy",
	"sandbox.patch_egress_rules", "sandbox.delete_egress_rules", "sandbox.get_diagnostic_logs",
	"sandbox.get_diagnostic_events",
	"manager.list_sandbox_infos", "manager.get_sandbox_info", "manager.kill_sandbox",
	"manager.pause_sandbox", "manager.resume_sandbox", "manager.renew_sandbox",
	"manager.patch_sandbox_metadata", "manager.get_endpoint", "manager.get_snapshot",
	"manager.delete_snapshot", "manager.list_snapshots",
	"commands.run", "commands.start", "execution.wait", "execution.cancel", "commands.interrupt",
	"commands.get_command_status", "commands.get_background_command_logs", "commands.set_env",
	"commands.create_session", "commands.run_in_session", "commands.delete_session",
	"code.create_context", "code.get_context", "code.delete_context", "code.list_contexts",
	"code.delete_contexts", "code.run", "code.start", "code.interrupt",
	"files.write_file", "files.write_files", "files.read_file", "files.read_bytes",
	"files.read_bytes_stream", "files.get_file_info", "files.delete_files",
	"files.delete_directories", "files.move_files", "files.set_permissions",
	"files.create_directories", "files.replace_contents", "files.replace_contents_detailed",
	"files.search", "files.list_directory", "metrics.watch",
	"pty.create", "pty.get", "pty.delete", "pty.attach", "pty.write", "pty.resize", "pty.read", "pty.close",
	"commands.follow_background_command_logs",
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	write := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(map[string]any{"ok": false, "error": map[string]any{"kind": "driver_error", "message": err.Error()}})
		}
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	write(map[string]any{
		"hello": "opensandbox-conformance", "protocol": 1, "language": "go",
		"sdk": "opensandbox-go", "sdk_version": opensandbox.Version, "ops": ops,
	})
	st := &state{
		sandboxes: map[string]*opensandbox.Sandbox{},
		contexts:  map[string]opensandbox.CodeContext{},
		runs:      map[string]chan runResult{},
		cancels:   map[string]context.CancelFunc{},
		pools:     map[string]*pooled{},
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var req request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				write(map[string]any{"id": nil, "ok": false, "error": map[string]any{"kind": "driver_error", "message": jerr.Error()}})
			} else {
				result, opErr := st.dispatch(req.Op, req.Args)
				if opErr != nil {
					write(map[string]any{"id": req.ID, "ok": false, "error": errorInfo(opErr)})
				} else {
					write(map[string]any{"id": req.ID, "ok": true, "result": result})
				}
			}
		}
		if err != nil {
			st.closePools()
			return
		}
	}
}

// errorInfo maps the SDK's error types to the protocol's error object.
func errorInfo(err error) map[string]any {
	var f *failure
	var api *opensandbox.APIError
	var rt *opensandbox.SandboxReadyTimeoutError
	var ia *opensandbox.InvalidArgumentError
	var e *opensandbox.Error
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	if info := poolErrorInfo(err); info != nil {
		return info
	}
	switch {
	case errors.As(err, &f):
		return map[string]any{"kind": f.kind, "message": f.msg}
	case errors.As(err, &api):
		var status any
		if api.StatusCode != 0 {
			status = api.StatusCode
		}
		return map[string]any{"kind": api.ErrorKind(), "status": status, "code": nullable(api.Response.Code),
			"request_id": nullable(api.RequestID), "message": api.Response.Message}
	case errors.As(err, &rt):
		return map[string]any{"kind": "ready_timeout", "message": rt.Error()}
	case errors.As(err, &ia):
		return map[string]any{"kind": "invalid_argument", "message": ia.Error()}
	case errors.As(err, &e):
		var status any
		if e.StatusCode != 0 {
			status = e.StatusCode
		}
		return map[string]any{"kind": e.Kind, "status": status, "code": nullable(e.Code),
			"request_id": nullable(e.RequestID), "message": e.Message}
	case errors.Is(err, context.DeadlineExceeded):
		return map[string]any{"kind": "timeout", "message": err.Error()}
	case errors.Is(err, context.Canceled):
		return map[string]any{"kind": "cancelled", "message": err.Error()}
	}
	return map[string]any{"kind": "internal", "message": err.Error()}
}

// ---------------------------------------------------------------------------------
// Arguments

type args map[string]json.RawMessage

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func (a args) isNull(k string) bool {
	v, ok := a[k]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

func (a args) get(k string, out any) error {
	v, ok := a[k]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, out); err != nil {
		return driverErr("argument %s: %v", k, err)
	}
	return nil
}

func (a args) str(k string) (string, error) {
	var s string
	if !a.has(k) || a.isNull(k) {
		return "", driverErr("argument %s is required", k)
	}
	return s, a.get(k, &s)
}

func (a args) optStr(k string) string {
	var s string
	_ = a.get(k, &s)
	return s
}

func (a args) boolean(k string) bool {
	var b bool
	_ = a.get(k, &b)
	return b
}

func (a args) num(k string) (float64, bool) {
	var f float64
	if !a.has(k) || a.isNull(k) {
		return 0, false
	}
	if a.get(k, &f) != nil {
		return 0, false
	}
	return f, true
}

func (a args) strMap(k string) map[string]string {
	var m map[string]string
	_ = a.get(k, &m)
	return m
}

func (a args) strList(k string) []string {
	var l []string
	_ = a.get(k, &l)
	return l
}

// typedList converts a string list into a list of a string-based enum type.
func typedList[T ~string](l []string) []T {
	if l == nil {
		return nil
	}
	out := make([]T, len(l))
	for i, v := range l {
		out[i] = T(v)
	}
	return out
}

func (a args) objects(k string) []args {
	var l []args
	_ = a.get(k, &l)
	return l
}

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// ---------------------------------------------------------------------------------
// State

func (st *state) config(a args) (opensandbox.ConnectionConfig, bool, error) {
	cfg := opensandbox.ConnectionConfig{}
	if !a.has("connection") || a.isNull("connection") {
		return cfg, false, nil
	}
	var conn args
	if err := a.get("connection", &conn); err != nil {
		return cfg, false, err
	}
	cfg.Domain = conn.optStr("domain")
	if conn.has("api_key") {
		cfg.APIKey = conn.optStr("api_key")
	}
	cfg.Headers = conn.strMap("headers")
	if t, ok := conn.num("request_timeout_s"); ok {
		cfg.RequestTimeout = secs(t)
	}
	cfg.UseServerProxy = conn.boolean("use_server_proxy")
	return cfg, true, nil
}

// noKey reports whether the connection override asks to send no API key at all.
func noKey(a args) bool {
	var conn args
	if a.get("connection", &conn) != nil || conn == nil {
		return false
	}
	return conn.has("api_key") && (conn.isNull("api_key") || conn.optStr("api_key") == "")
}

// withoutEnvKey runs f with OPEN_SANDBOX_API_KEY unset (the SDK falls back to it for
// an empty APIKey), so that a configuration built inside f sends no key.
func withoutEnvKey[T any](on bool, f func() (T, error)) (T, error) {
	if !on {
		return f()
	}
	old, had := os.LookupEnv("OPEN_SANDBOX_API_KEY")
	os.Unsetenv("OPEN_SANDBOX_API_KEY")
	defer func() {
		if had {
			os.Setenv("OPEN_SANDBOX_API_KEY", old)
		}
	}()
	return f()
}

func (st *state) mgr(a args) (*opensandbox.SandboxManager, func(), error) {
	cfg, override, err := st.config(a)
	if err != nil {
		return nil, nil, err
	}
	if override {
		m, _ := withoutEnvKey(noKey(a), func() (*opensandbox.SandboxManager, error) {
			return opensandbox.NewSandboxManager(cfg), nil
		})
		return m, func() { _ = m.Close() }, nil
	}
	if st.manager == nil {
		st.manager = opensandbox.NewSandboxManager(cfg)
	}
	return st.manager, func() {}, nil
}

func (st *state) sandbox(ctx context.Context, a args) (*opensandbox.Sandbox, func(), error) {
	id, err := a.str("sandbox")
	if err != nil {
		return nil, nil, err
	}
	cfg, override, err := st.config(a)
	if err != nil {
		return nil, nil, err
	}
	if override {
		sb, err := withoutEnvKey(noKey(a), func() (*opensandbox.Sandbox, error) {
			return opensandbox.ConnectSandbox(ctx, cfg, id)
		})
		if err != nil {
			return nil, nil, err
		}
		return sb, func() { _ = sb.Close() }, nil
	}
	if sb, ok := st.sandboxes[id]; ok {
		return sb, func() {}, nil
	}
	sb, err := opensandbox.ConnectSandbox(ctx, cfg, id)
	if err != nil {
		return nil, nil, err
	}
	st.sandboxes[id] = sb
	return sb, func() {}, nil
}

func (st *state) keep(a args, sb *opensandbox.Sandbox) {
	if _, override, _ := st.config(a); override {
		_ = sb.Close()
		return
	}
	if old, ok := st.sandboxes[sb.ID()]; ok && old != sb {
		_ = old.Close()
	}
	st.sandboxes[sb.ID()] = sb
}

// ---------------------------------------------------------------------------------
// Conversions (PROTOCOL.md §2.2)

func tm(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.Format(time.RFC3339Nano)
}

func nz(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func sandboxInfo(s *opensandbox.SandboxInfo) any {
	var image any
	if s.Image != nil {
		image = map[string]any{"uri": s.Image.URI}
	}
	md := s.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return map[string]any{
		"id": s.ID,
		"status": map[string]any{
			"state": string(s.Status.State), "reason": nz(s.Status.Reason),
			"message": nz(s.Status.Message), "last_transition_at": tm(s.Status.LastTransitionAt),
		},
		"entrypoint": s.Entrypoint, "expires_at": tm(s.ExpiresAt), "created_at": tm(&s.CreatedAt),
		"image": image, "snapshot_id": nz(s.SnapshotID), "metadata": md,
	}
}

func pagination(p opensandbox.PaginationInfo) any {
	return map[string]any{"page": p.Page, "page_size": p.PageSize, "total_items": p.TotalItems,
		"total_pages": p.TotalPages, "has_next_page": p.HasNextPage}
}

func snapshot(s *opensandbox.SnapshotInfo) any {
	return map[string]any{
		"id": s.ID, "sandbox_id": s.SandboxID, "name": nz(s.Name),
		"status":     map[string]any{"state": s.Status.State, "reason": nz(s.Status.Reason), "message": nz(s.Status.Message)},
		"created_at": tm(&s.CreatedAt),
	}
}

func endpoint(e *opensandbox.Endpoint) any {
	h := e.Headers
	if h == nil {
		h = map[string]string{}
	}
	return map[string]any{"endpoint": e.Endpoint, "headers": h}
}

func metrics(m opensandbox.Metrics) any {
	return map[string]any{"cpu_count": m.CPUCount, "cpu_used_percentage": m.CPUUsedPct,
		"memory_total_in_mib": m.MemTotalMB, "memory_used_in_mib": m.MemUsedMB, "timestamp": m.Timestamp}
}

func policy(p *opensandbox.NetworkPolicy) any {
	if p == nil {
		p = &opensandbox.NetworkPolicy{}
	}
	rules := []any{}
	for _, r := range p.Egress {
		rules = append(rules, map[string]any{"action": r.Action, "target": r.Target})
	}
	return map[string]any{"default_action": nz(p.DefaultAction), "egress": rules}
}

func diagnostic(d *opensandbox.DiagnosticContent) any {
	w := d.Warnings
	if w == nil {
		w = []string{}
	}
	return map[string]any{
		"sandbox_id": d.SandboxID, "kind": d.Kind, "scope": d.Scope, "delivery": d.Delivery,
		"content_type": d.ContentType, "truncated": d.Truncated, "content": d.Content,
		"content_url": d.ContentURL, "content_length": d.ContentLength, "expires_at": d.ExpiresAt,
		"warnings": w,
	}
}

func entry(e opensandbox.FileInfo) any {
	typ := e.Type
	if typ == "" {
		typ = "other"
	}
	return map[string]any{"path": e.Path, "type": typ, "mode": e.Mode, "owner": e.Owner,
		"group": e.Group, "size": e.Size, "modified_at": tm(&e.ModifiedAt), "created_at": tm(&e.CreatedAt)}
}

func entries(l []opensandbox.FileInfo) any {
	out := []any{}
	for _, e := range l {
		out = append(out, entry(e))
	}
	return out
}

func codeContext(c *opensandbox.CodeContext) any {
	return map[string]any{"id": nz(c.ID), "language": c.Language}
}

// recorder builds the handlers of a run (PROTOCOL.md §2.2: events and digest).
type recorder struct {
	events []any
	record bool
	digest bool
	// skip is the request's skip_accumulation (the handlers' own option).
	skip bool
	hash interface {
		io.Writer
		Sum([]byte) []byte
	}
	bytes, lines int64
	onInit       func(string)
}

func newRecorder(record, digest bool) *recorder {
	r := &recorder{record: record, digest: digest}
	if digest {
		r.hash = sha256.New()
	}
	return r
}

func (r *recorder) push(v map[string]any) {
	if r.record {
		r.events = append(r.events, v)
	}
}

func (r *recorder) handlers() *opensandbox.ExecutionHandlers {
	return &opensandbox.ExecutionHandlers{
		SkipAccumulation: r.digest || r.skip,
		OnInit: func(i opensandbox.ExecutionInit) error {
			if r.onInit != nil {
				r.onInit(i.ID)
				r.onInit = nil
			}
			r.push(map[string]any{"type": "init", "id": i.ID})
			return nil
		},
		OnStdout: func(m opensandbox.OutputMessage) error {
			if r.digest {
				// The output's bytes whatever the framing: a line-framed text gets its
				// newline back, a kept one already ends with it.
				io.WriteString(r.hash, m.Text)
				r.bytes += int64(len(m.Text))
				r.lines += int64(strings.Count(m.Text, "\n"))
				if !strings.HasSuffix(m.Text, "\n") {
					r.hash.Write([]byte{'\n'})
					r.bytes++
					r.lines++
				}
			}
			r.push(map[string]any{"type": "stdout", "text": m.Text})
			return nil
		},
		OnStderr: func(m opensandbox.OutputMessage) error {
			r.push(map[string]any{"type": "stderr", "text": m.Text})
			return nil
		},
		OnResult: func(x opensandbox.ExecutionResult) error {
			r.push(map[string]any{"type": "result", "text": resultText(x)})
			return nil
		},
		OnError: func(e opensandbox.ExecutionError) error {
			r.push(map[string]any{"type": "error", "name": e.Name, "value": e.Value})
			return nil
		},
		OnComplete: func(opensandbox.ExecutionComplete) error {
			r.push(map[string]any{"type": "execution_complete"})
			return nil
		},
	}
}

func resultText(x opensandbox.ExecutionResult) any {
	if t, ok := x.Results["text/plain"]; ok {
		return t
	}
	return nil
}

func texts(l []opensandbox.OutputMessage) []string {
	out := []string{}
	for _, m := range l {
		out = append(out, m.Text)
	}
	return out
}

func execution(e *opensandbox.Execution, r *recorder) map[string]any {
	results := []any{}
	for _, x := range e.Results {
		results = append(results, map[string]any{"text": resultText(x)})
	}
	var errV, complete any
	if e.Error != nil {
		tb := e.Error.Traceback
		if tb == nil {
			tb = []string{}
		}
		errV = map[string]any{"name": e.Error.Name, "value": e.Error.Value, "traceback": tb}
	}
	if e.Complete != nil {
		complete = map[string]any{"execution_time_ms": e.Complete.ExecutionTime}
	}
	v := map[string]any{
		"id": nz(e.ID), "exit_code": e.ExitCode, "stdout": texts(e.Stdout), "stderr": texts(e.Stderr),
		"results": results, "error": errV, "complete": complete, "execution_count": e.ExecutionCount,
	}
	if r != nil && r.record {
		ev := r.events
		if ev == nil {
			ev = []any{}
		}
		v["events"] = ev
	}
	if r != nil && r.digest {
		v["stdout_digest"] = map[string]any{"sha256": hex.EncodeToString(r.hash.Sum(nil)), "bytes": r.bytes, "lines": r.lines}
	}
	return v
}

// ---------------------------------------------------------------------------------
// Dispatch

func (st *state) dispatch(op string, a args) (any, error) {
	ctx := context.Background()
	switch {
	case strings.HasPrefix(op, "manager.") && strings.Contains(op, "_template"):
		return st.templateOp(ctx, op, a)
	case strings.HasPrefix(op, "manager."):
		return st.managerOp(ctx, op, a)
	case op == "sandbox.create" || op == "sandbox.connect" || op == "sandbox.resume":
		return st.open(ctx, op, a)
	case strings.HasPrefix(op, "pool."):
		return st.poolOp(ctx, op, a)
	case op == "execution.wait":
		h, err := a.str("handle")
		if err != nil {
			return nil, err
		}
		ch, ok := st.runs[h]
		if !ok {
			return nil, driverErr("no run with handle %s", h)
		}
		delete(st.runs, h)
		r := <-ch
		if cancel := st.cancels[h]; cancel != nil {
			cancel()
			delete(st.cancels, h)
		}
		return r.value, r.err
	case op == "pty.write" || op == "pty.resize" || op == "pty.read" || op == "pty.close":
		return st.ptyConnOp(ctx, op, a)
	case op == "execution.cancel":
		// Go's own cancellation: cancelling the context the run was started with.
		h, err := a.str("handle")
		if err != nil {
			return nil, err
		}
		cancel, ok := st.cancels[h]
		if !ok {
			return nil, driverErr("no run with handle %s", h)
		}
		cancel()
		return nil, nil
	}
	sb, release, err := st.sandbox(ctx, a)
	if err != nil {
		return nil, err
	}
	defer release()
	switch {
	case strings.HasPrefix(op, "sandbox."):
		return st.sandboxOp(ctx, op, sb, a)
	case strings.HasPrefix(op, "commands."):
		return st.commandsOp(ctx, op, sb, a)
	case strings.HasPrefix(op, "code."):
		return st.codeOp(ctx, op, sb, a)
	case strings.HasPrefix(op, "files."):
		fs, err := fileTarget(ctx, sb, a)
		if err != nil {
			return nil, err
		}
		return filesOp(ctx, op, fs, a)
	case strings.HasPrefix(op, "credential_vault."):
		return st.vaultOp(ctx, op, sb, a)
	case strings.HasPrefix(op, "isolation."):
		return st.isolationOp(ctx, op, sb, a)
	case strings.HasPrefix(op, "pty."):
		return st.ptyOp(ctx, op, sb, a)
	case strings.HasPrefix(op, "execution."):
		return st.executionOp(ctx, op, sb, a)
	case op == "metrics.watch":
		n := 1
		if c, ok := a.num("count"); ok {
			n = int(c)
		}
		out := []any{}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := sb.WatchMetrics(wctx, func(m opensandbox.Metrics) error {
			out = append(out, metrics(m))
			if len(out) >= n {
				cancel()
			}
			return nil
		})
		if err != nil && !(errors.Is(err, context.Canceled) && len(out) >= n) {
			return nil, err
		}
		return out, nil
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

func (st *state) open(ctx context.Context, op string, a args) (any, error) {
	cfg, _, err := st.config(a)
	if err != nil {
		return nil, err
	}
	var sb *opensandbox.Sandbox
	switch op {
	case "sandbox.create":
		o := opensandbox.SandboxCreateOptions{
			Image: a.optStr("image"), SnapshotID: a.optStr("snapshot_id"), Entrypoint: a.strList("entrypoint"),
			Env: a.strMap("env"), Metadata: a.strMap("metadata"), Extensions: a.strMap("extensions"),
			SkipHealthCheck: a.boolean("skip_health_check"),
		}
		if a.has("resource") {
			o.ResourceLimits = a.strMap("resource")
		}
		if a.isNull("timeout_s") {
			o.ManualCleanup = true
		} else if t, ok := a.num("timeout_s"); ok {
			v := int(t)
			o.TimeoutSeconds = &v
		}
		if t, ok := a.num("ready_timeout_s"); ok {
			o.ReadyTimeout = secs(t)
		}
		if a.has("network_policy") && !a.isNull("network_policy") {
			var np args
			_ = a.get("network_policy", &np)
			p := &opensandbox.NetworkPolicy{DefaultAction: np.optStr("default_action")}
			for _, r := range np.objects("egress") {
				p.Egress = append(p.Egress, opensandbox.NetworkRule{Action: r.optStr("action"), Target: r.optStr("target")})
			}
			o.NetworkPolicy = p
		}
		if err := createOptions11(a, &o); err != nil {
			return nil, err
		}
		sb, err = withoutEnvKey(noKey(a), func() (*opensandbox.Sandbox, error) {
			return opensandbox.CreateSandbox(ctx, cfg, o)
		})
	default:
		id, e := a.str("sandbox_id")
		if e != nil {
			return nil, e
		}
		timeoutArg := "connect_timeout_s"
		if op == "sandbox.resume" {
			timeoutArg = "resume_timeout_s"
		}
		var ready []opensandbox.ReadyOptions
		if !a.boolean("skip_health_check") {
			r := opensandbox.ReadyOptions{}
			if t, ok := a.num(timeoutArg); ok {
				r.Timeout = secs(t)
			}
			ready = append(ready, r)
		}
		sb, err = withoutEnvKey(noKey(a), func() (*opensandbox.Sandbox, error) {
			if op == "sandbox.resume" {
				return opensandbox.ResumeSandbox(ctx, cfg, id, ready...)
			}
			return opensandbox.ConnectSandbox(ctx, cfg, id, ready...)
		})
	}
	if err != nil {
		return nil, err
	}
	st.keep(a, sb)
	return map[string]any{"id": sb.ID()}, nil
}

func rules(a args, k string) []opensandbox.NetworkRule {
	out := []opensandbox.NetworkRule{}
	for _, r := range a.objects(k) {
		out = append(out, opensandbox.NetworkRule{Action: r.optStr("action"), Target: r.optStr("target")})
	}
	return out
}

func patch(a args) opensandbox.MetadataPatch {
	var p map[string]*string
	_ = a.get("patch", &p)
	return p
}

func (st *state) sandboxOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	switch op {
	case "sandbox.get_info":
		i, err := sb.GetInfo(ctx)
		if err != nil {
			return nil, err
		}
		return sandboxInfo(i), nil
	case "sandbox.is_healthy":
		return map[string]any{"healthy": sb.IsHealthy(ctx)}, nil
	case "sandbox.renew":
		s, _ := a.num("seconds")
		r, err := sb.Renew(ctx, secs(s))
		if err != nil {
			return nil, err
		}
		return map[string]any{"expires_at": tm(&r.ExpiresAt)}, nil
	case "sandbox.patch_metadata":
		i, err := sb.PatchMetadata(ctx, patch(a))
		if err != nil {
			return nil, err
		}
		return sandboxInfo(i), nil
	case "sandbox.pause":
		return nil, sb.Pause(ctx)
	case "sandbox.kill":
		if err := sb.Kill(ctx); err != nil {
			return nil, err
		}
		delete(st.sandboxes, sb.ID())
		return nil, nil
	case "sandbox.get_endpoint":
		p, _ := a.num("port")
		e, err := sb.GetEndpoint(ctx, int(p))
		if err != nil {
			return nil, err
		}
		return endpoint(e), nil
	case "sandbox.get_metrics":
		m, err := sb.GetMetrics(ctx)
		if err != nil {
			return nil, err
		}
		return metrics(*m), nil
	case "sandbox.create_snapshot":
		s, err := sb.CreateSnapshot(ctx, opensandbox.CreateSnapshotRequest{Name: a.optStr("name")})
		if err != nil {
			return nil, err
		}
		return snapshot(s), nil
	case "sandbox.get_egress_policy":
		p, err := sb.GetEgressPolicy(ctx)
		if err != nil {
			return nil, err
		}
		return policy(p.Policy), nil
	case "sandbox.patch_egress_rules":
		p, err := sb.PatchEgressRules(ctx, rules(a, "rules"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": nz(p.Status), "mode": nz(p.Mode)}, nil
	case "sandbox.delete_egress_rules":
		p, err := sb.DeleteEgressRules(ctx, a.strList("targets"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": nz(p.Status), "mode": nz(p.Mode)}, nil
	case "sandbox.get_diagnostic_logs", "sandbox.get_diagnostic_events":
		scope, err := a.str("scope")
		if err != nil {
			return nil, err
		}
		var d *opensandbox.DiagnosticContent
		if op == "sandbox.get_diagnostic_logs" {
			d, err = sb.GetDiagnosticLogs(ctx, scope)
		} else {
			d, err = sb.GetDiagnosticEvents(ctx, scope)
		}
		if err != nil {
			return nil, err
		}
		return diagnostic(d), nil
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

func (st *state) managerOp(ctx context.Context, op string, a args) (any, error) {
	m, release, err := st.mgr(a)
	if err != nil {
		return nil, err
	}
	defer release()
	id := a.optStr("sandbox_id")
	switch op {
	case "manager.list_sandbox_infos":
		o := opensandbox.ListOptions{States: typedList[opensandbox.SandboxState](a.strList("states")), Metadata: a.strMap("metadata")}
		if p, ok := a.num("page"); ok {
			o.Page = int(p)
		}
		if p, ok := a.num("page_size"); ok {
			o.PageSize = int(p)
		}
		r, err := m.ListSandboxInfos(ctx, o)
		if err != nil {
			return nil, err
		}
		items := []any{}
		for i := range r.Items {
			items = append(items, sandboxInfo(&r.Items[i]))
		}
		return map[string]any{"sandbox_infos": items, "pagination": pagination(r.Pagination)}, nil
	case "manager.get_sandbox_info":
		i, err := m.GetSandboxInfo(ctx, id)
		if err != nil {
			return nil, err
		}
		return sandboxInfo(i), nil
	case "manager.kill_sandbox":
		return nil, m.KillSandbox(ctx, id)
	case "manager.pause_sandbox":
		return nil, m.PauseSandbox(ctx, id)
	case "manager.resume_sandbox":
		return nil, m.ResumeSandbox(ctx, id)
	case "manager.renew_sandbox":
		s, _ := a.num("seconds")
		r, err := m.RenewSandbox(ctx, id, secs(s))
		if err != nil {
			return nil, err
		}
		return map[string]any{"expires_at": tm(&r.ExpiresAt)}, nil
	case "manager.patch_sandbox_metadata":
		i, err := m.PatchSandboxMetadata(ctx, id, patch(a))
		if err != nil {
			return nil, err
		}
		return sandboxInfo(i), nil
	case "manager.get_endpoint":
		p, _ := a.num("port")
		e, err := m.GetEndpoint(ctx, id, int(p))
		if err != nil {
			return nil, err
		}
		return endpoint(e), nil
	case "manager.get_snapshot":
		s, err := m.GetSnapshot(ctx, a.optStr("snapshot_id"))
		if err != nil {
			return nil, err
		}
		return snapshot(s), nil
	case "manager.delete_snapshot":
		return nil, m.DeleteSnapshot(ctx, a.optStr("snapshot_id"))
	case "manager.list_snapshots":
		o := opensandbox.ListSnapshotsOptions{SandboxID: id, States: typedList[opensandbox.SnapshotState](a.strList("states"))}
		if p, ok := a.num("page"); ok {
			o.Page = int(p)
		}
		if p, ok := a.num("page_size"); ok {
			o.PageSize = int(p)
		}
		r, err := m.ListSnapshots(ctx, o)
		if err != nil {
			return nil, err
		}
		items := []any{}
		for i := range r.Items {
			items = append(items, snapshot(&r.Items[i]))
		}
		return map[string]any{"snapshot_infos": items, "pagination": pagination(r.Pagination)}, nil
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

func commandRequest(a args) (opensandbox.RunCommandRequest, error) {
	cmd, err := a.str("command")
	if err != nil {
		return opensandbox.RunCommandRequest{}, err
	}
	r := opensandbox.RunCommandRequest{Command: cmd, Cwd: a.optStr("working_directory"),
		Background: a.boolean("background"), Envs: a.strMap("envs")}
	if t, ok := a.num("timeout_ms"); ok {
		r.Timeout = int64(t)
	}
	if u, ok := a.num("uid"); ok {
		v := int32(u)
		r.UID = &v
	}
	if g, ok := a.num("gid"); ok {
		v := int32(g)
		r.GID = &v
	}
	return r, nil
}

// start runs f in a goroutine and answers once the execution id is known;
// execution.cancel cancels the context f got.
func (st *state) start(f func(ctx context.Context, r *recorder) (*opensandbox.Execution, error), record, skip bool) (any, error) {
	rec := newRecorder(record, false)
	rec.skip = skip
	idCh := make(chan string, 1)
	rec.onInit = func(id string) { idCh <- id }
	done := make(chan runResult, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		e, err := f(ctx, rec)
		if err != nil {
			done <- runResult{err: err}
			return
		}
		done <- runResult{value: execution(e, rec)}
	}()
	select {
	case id := <-idCh:
		st.next++
		h := fmt.Sprintf("run-%d", st.next)
		st.runs[h] = done
		st.cancels[h] = cancel
		return map[string]any{"handle": h, "id": id}, nil
	case r := <-done:
		cancel()
		if r.err != nil {
			return nil, r.err
		}
		return nil, driverErr("the run ended without an init event")
	case <-time.After(30 * time.Second):
		cancel()
		return nil, driverErr("no init event within 30s")
	}
}

func (st *state) commandsOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	switch op {
	case "commands.run":
		req, err := commandRequest(a)
		if err != nil {
			return nil, err
		}
		rec := newRecorder(a.boolean("handlers"), a.boolean("digest"))
		rec.skip = a.boolean("skip_accumulation")
		e, err := sb.RunCommandWithOpts(ctx, req, rec.handlers())
		if err != nil {
			return nil, err
		}
		return execution(e, rec), nil
	case "commands.start":
		req, err := commandRequest(a)
		if err != nil {
			return nil, err
		}
		return st.start(func(ctx context.Context, r *recorder) (*opensandbox.Execution, error) {
			return sb.RunCommandWithOpts(ctx, req, r.handlers())
		}, a.boolean("handlers"), a.boolean("skip_accumulation"))
	case "commands.interrupt":
		return nil, sb.InterruptCommand(ctx, a.optStr("id"))
	case "commands.set_env":
		return nil, sb.SetEnv(ctx, a.optStr("key"), a.optStr("value"))
	case "commands.get_command_status":
		s, err := sb.GetCommandStatus(ctx, a.optStr("id"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": s.ID, "content": s.Content, "running": s.Running, "exit_code": s.ExitCode,
			"error": nz(s.Error), "started_at": tm(&s.StartedAt), "finished_at": tm(s.FinishedAt)}, nil
	case "commands.follow_background_command_logs":
		return followLogs(ctx, sb, a)
	case "commands.get_background_command_logs":
		var cursor *int64
		if c, ok := a.num("cursor"); ok {
			v := int64(c)
			cursor = &v
		}
		l, err := sb.GetCommandLogs(ctx, a.optStr("id"), cursor)
		if err != nil {
			return nil, err
		}
		var cur any
		if l.Cursor >= 0 {
			cur = l.Cursor
		}
		return map[string]any{"content": l.Output, "cursor": cur}, nil
	case "commands.create_session":
		s, err := sb.CreateSessionWithOpts(ctx, opensandbox.CreateSessionRequest{Cwd: a.optStr("working_directory")})
		if err != nil {
			return nil, err
		}
		return map[string]any{"session_id": s.ID}, nil
	case "commands.run_in_session":
		sid, err := a.str("session_id")
		if err != nil {
			return nil, err
		}
		cmd, err := a.str("command")
		if err != nil {
			return nil, err
		}
		req := opensandbox.RunInSessionRequest{Command: cmd, Cwd: a.optStr("working_directory")}
		if t, ok := a.num("timeout_ms"); ok {
			req.Timeout = int64(t)
		}
		rec := newRecorder(a.boolean("handlers"), false)
		rec.skip = a.boolean("skip_accumulation")
		e, err := sb.RunInSession(ctx, sid, req, rec.handlers())
		if err != nil {
			return nil, err
		}
		return execution(e, rec), nil
	case "commands.delete_session":
		return nil, sb.DeleteSession(ctx, a.optStr("session_id"))
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

func (st *state) codeTarget(ctx context.Context, sb *opensandbox.Sandbox, a args) (*opensandbox.CodeContext, error) {
	if id := a.optStr("context_id"); id != "" {
		if c, ok := st.contexts[sb.ID()+"/"+id]; ok {
			return &c, nil
		}
		c, err := sb.GetContext(ctx, id)
		if err != nil {
			return nil, err
		}
		st.contexts[sb.ID()+"/"+id] = *c
		return c, nil
	}
	lang := a.optStr("language")
	if lang == "" {
		lang = "python"
	}
	return &opensandbox.CodeContext{Language: lang}, nil
}

func (st *state) codeOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	switch op {
	case "code.create_context":
		lang, err := a.str("language")
		if err != nil {
			return nil, err
		}
		c, err := sb.CreateContext(ctx, opensandbox.CreateContextRequest{Language: lang, Cwd: a.optStr("cwd")})
		if err != nil {
			return nil, err
		}
		if c.ID != "" {
			st.contexts[sb.ID()+"/"+c.ID] = *c
		}
		return codeContext(c), nil
	case "code.get_context":
		c, err := sb.GetContext(ctx, a.optStr("context_id"))
		if err != nil {
			return nil, err
		}
		return codeContext(c), nil
	case "code.list_contexts":
		l, err := sb.ListContexts(ctx, a.optStr("language"))
		if err != nil {
			return nil, err
		}
		out := []any{}
		for i := range l {
			out = append(out, codeContext(&l[i]))
		}
		return out, nil
	case "code.delete_context":
		return nil, sb.DeleteContext(ctx, a.optStr("context_id"))
	case "code.delete_contexts":
		return nil, sb.DeleteContextsByLanguage(ctx, a.optStr("language"))
	case "code.run", "code.start":
		target, err := st.codeTarget(ctx, sb, a)
		if err != nil {
			return nil, err
		}
		code, err := a.str("code")
		if err != nil {
			return nil, err
		}
		req := opensandbox.RunCodeRequest{Context: target, Code: code}
		if op == "code.start" {
			return st.start(func(ctx context.Context, r *recorder) (*opensandbox.Execution, error) {
				return sb.ExecuteCode(ctx, req, r.handlers())
			}, a.boolean("handlers"), a.boolean("skip_accumulation"))
		}
		rec := newRecorder(a.boolean("handlers"), false)
		rec.skip = a.boolean("skip_accumulation")
		e, err := sb.ExecuteCode(ctx, req, rec.handlers())
		if err != nil {
			return nil, err
		}
		return execution(e, rec), nil
	case "code.interrupt":
		return nil, sb.InterruptCode(ctx, a.optStr("id"))
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

// repeatReader yields text repeated times without holding it all.
type repeatReader struct {
	text []byte
	left int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.left > 0 {
		c := copy(p[n:], r.text[r.off:])
		n += c
		r.off += c
		if r.off == len(r.text) {
			r.off = 0
			r.left--
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func writeEntry(a args) (io.Reader, opensandbox.UploadFileOptions, error) {
	path, err := a.str("path")
	if err != nil {
		return nil, opensandbox.UploadFileOptions{}, err
	}
	opts := opensandbox.UploadFileOptions{Metadata: opensandbox.FileMetadata{Path: path, Owner: a.optStr("owner"), Group: a.optStr("group")}}
	if m, ok := a.num("mode"); ok {
		opts.Metadata.Mode = int(m)
	}
	switch {
	case a.has("data_b64") && !a.isNull("data_b64"):
		b, err := base64.StdEncoding.DecodeString(a.optStr("data_b64"))
		if err != nil {
			return nil, opts, driverErr("data_b64: %v", err)
		}
		return bytes.NewReader(b), opts, nil
	case a.has("data_gen") && !a.isNull("data_gen"):
		var g args
		_ = a.get("data_gen", &g)
		t, _ := g.num("times")
		text := g.optStr("text")
		if text == "" || t <= 0 {
			return strings.NewReader(""), opts, nil
		}
		return &repeatReader{text: []byte(text), left: int(t)}, opts, nil
	}
	return strings.NewReader(a.optStr("data")), opts, nil
}

func download(ctx context.Context, sb opensandbox.IdentityFilesystem, a args) (io.ReadCloser, error) {
	path, err := a.str("path")
	if err != nil {
		return nil, err
	}
	var o opensandbox.DownloadFileOptions
	if v, ok := a.num("offset"); ok {
		o.Offset = int(v)
	}
	if v, ok := a.num("limit"); ok {
		o.Limit = int(v)
	}
	return sb.DownloadFile(ctx, path, a.optStr("range"), o)
}

func filesOp(ctx context.Context, op string, sb opensandbox.IdentityFilesystem, a args) (any, error) {
	switch op {
	case "files.write_file":
		r, opts, err := writeEntry(a)
		if err != nil {
			return nil, err
		}
		return nil, sb.UploadFile(ctx, r, opts)
	case "files.write_files":
		var list []opensandbox.UploadFileEntry
		for _, e := range a.objects("entries") {
			r, opts, err := writeEntry(e)
			if err != nil {
				return nil, err
			}
			list = append(list, opensandbox.UploadFileEntry{File: r, Options: opts})
		}
		return nil, sb.UploadFiles(ctx, list)
	case "files.read_file", "files.read_bytes", "files.read_bytes_stream":
		rc, err := download(ctx, sb, a)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		if op == "files.read_bytes_stream" {
			h := sha256.New()
			n, err := io.Copy(h, rc)
			if err != nil {
				return nil, err
			}
			return map[string]any{"size": n, "sha256": hex.EncodeToString(h.Sum(nil))}, nil
		}
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, err
		}
		if op == "files.read_file" {
			return map[string]any{"text": string(b)}, nil
		}
		s := sha256.Sum256(b)
		return map[string]any{"data_b64": base64.StdEncoding.EncodeToString(b), "size": len(b), "sha256": hex.EncodeToString(s[:])}, nil
	case "files.get_file_info":
		out := map[string]any{}
		for _, p := range a.strList("paths") {
			m, err := sb.GetFileInfo(ctx, p)
			if err != nil {
				return nil, err
			}
			for k, v := range m {
				out[k] = entry(v)
			}
		}
		return out, nil
	case "files.delete_files":
		return nil, sb.DeleteFiles(ctx, a.strList("paths"))
	case "files.delete_directories":
		for _, p := range a.strList("paths") {
			if err := sb.DeleteDirectory(ctx, p); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case "files.move_files":
		var req opensandbox.MoveRequest
		for _, e := range a.objects("entries") {
			req = append(req, opensandbox.MoveItem{Src: e.optStr("src"), Dest: e.optStr("dest")})
		}
		return nil, sb.MoveFiles(ctx, req)
	case "files.set_permissions":
		req := opensandbox.PermissionsRequest{}
		for _, e := range a.objects("entries") {
			m, _ := e.num("mode")
			req[e.optStr("path")] = opensandbox.Permission{Owner: e.optStr("owner"), Group: e.optStr("group"), Mode: int(m)}
		}
		return nil, sb.SetPermissions(ctx, req)
	case "files.create_directories":
		for _, e := range a.objects("entries") {
			m, _ := e.num("mode")
			if err := sb.CreateDirectory(ctx, e.optStr("path"), int(m)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case "files.replace_contents", "files.replace_contents_detailed":
		req := opensandbox.ReplaceRequest{}
		var order []string
		for _, e := range a.objects("entries") {
			p := e.optStr("path")
			order = append(order, p)
			req[p] = opensandbox.ReplaceItem{Old: e.optStr("old_content"), New: e.optStr("new_content")}
		}
		if op == "files.replace_contents" {
			return nil, sb.ReplaceInFiles(ctx, req)
		}
		r, err := sb.ReplaceInFilesDetailed(ctx, req)
		if err != nil {
			return nil, err
		}
		out := []any{}
		for _, p := range order {
			if v, ok := r[p]; ok {
				out = append(out, map[string]any{"path": p, "replaced_count": v.ReplacedCount})
			}
		}
		return out, nil
	case "files.search":
		l, err := sb.SearchFiles(ctx, a.optStr("path"), a.optStr("pattern"))
		if err != nil {
			return nil, err
		}
		return entries(l), nil
	case "files.list_directory":
		var l []opensandbox.FileInfo
		var err error
		if d, ok := a.num("depth"); ok {
			l, err = sb.ListDirectoryWithDepth(ctx, a.optStr("path"), int(d))
		} else {
			l, err = sb.ListDirectory(ctx, a.optStr("path"))
		}
		if err != nil {
			return nil, err
		}
		return entries(l), nil
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

// ptyOp: the sandbox-bound PTY ops (PROTOCOL.md §2.8).
func (st *state) ptyOp(ctx context.Context, op string, sb *opensandbox.Sandbox, a args) (any, error) {
	switch op {
	case "pty.create":
		s, err := sb.CreatePtySession(ctx, opensandbox.PtyCreateRequest{Cwd: a.optStr("cwd"), Command: a.optStr("command")})
		if err != nil {
			return nil, err
		}
		return map[string]any{"session_id": s.SessionID}, nil
	case "pty.get":
		s, err := sb.GetPtySession(ctx, a.optStr("session_id"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"session_id": s.SessionID, "running": s.Running, "output_offset": s.OutputOffset}, nil
	case "pty.delete":
		return nil, sb.DeletePtySession(ctx, a.optStr("session_id"))
	case "pty.attach":
		opts := opensandbox.PtyAttachOptions{Pipe: a.optStr("mode") == "pipe", Takeover: a.boolean("takeover")}
		if v, ok := a.num("since"); ok {
			since := int64(v)
			opts.Since = &since
		}
		conn, err := sb.AttachPty(ctx, a.optStr("session_id"), opts)
		if err != nil {
			return nil, err
		}
		st.next++
		h := fmt.Sprintf("pty-%d", st.next)
		if st.ptys == nil {
			st.ptys = map[string]*opensandbox.PtyConn{}
		}
		st.ptys[h] = conn
		return map[string]any{"handle": h, "mode": conn.Mode()}, nil
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

// ptyConnOp: the PTY ops on an attached connection (io.ReadWriteCloser plus extras).
func (st *state) ptyConnOp(ctx context.Context, op string, a args) (any, error) {
	h, err := a.str("handle")
	if err != nil {
		return nil, err
	}
	conn, ok := st.ptys[h]
	if !ok {
		return nil, driverErr("no pty with handle %s", h)
	}
	switch op {
	case "pty.write":
		_, err := io.WriteString(conn, a.optStr("text"))
		return nil, err
	case "pty.resize":
		cols, _ := a.num("cols")
		rows, _ := a.num("rows")
		return nil, conn.Resize(ctx, int(cols), int(rows))
	case "pty.close":
		delete(st.ptys, h)
		if err := conn.Close(); err != nil {
			return nil, err
		}
		return map[string]any{"next_offset": conn.NextOffset()}, nil
	}
	opts := opensandbox.PtyReadOptions{Until: a.optStr("until"), UntilExit: a.boolean("until_exit")}
	if v, ok := a.num("wait_ms"); ok {
		opts.WaitMs = int64(v)
	}
	r, err := conn.ReadChunk(ctx, opts)
	if err != nil {
		return nil, err
	}
	var offset, channel any
	if r.Offset >= 0 {
		offset = r.Offset
	}
	if r.Channel != "" {
		channel = r.Channel
	}
	return map[string]any{"output": strings.ToValidUTF8(string(r.Data), "\uFFFD"), "channel": channel, "offset": offset,
		"next_offset": r.NextOffset, "exit_code": r.ExitCode, "closed": r.Closed, "close_code": r.CloseCode,
		"timed_out": r.TimedOut, "done": r.Done}, nil
}

// followLogs: commands.follow_background_command_logs over Sandbox.FollowCommandLogs.
func followLogs(ctx context.Context, sb *opensandbox.Sandbox, a args) (any, error) {
	var start int64
	if v, ok := a.num("cursor"); ok {
		start = int64(v)
	}
	limit := int64(-1)
	if v, ok := a.num("max_bytes"); ok {
		limit = int64(v)
	}
	var content []byte
	var first any
	expected, contiguous, chunks, ended := start, true, 0, true
	stop := errors.New("enough")
	err := sb.FollowCommandLogs(ctx, a.optStr("id"), start, func(c opensandbox.LogChunk) error {
		chunks++
		if first == nil {
			first = c.Offset
		}
		contiguous = contiguous && c.Offset == expected
		expected = c.Offset + int64(len(c.Data))
		content = append(content, c.Data...)
		if limit >= 0 && int64(len(content)) >= limit {
			ended = false
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	return map[string]any{"content": strings.ToValidUTF8(string(content), "\uFFFD"), "first_offset": first,
		"cursor": expected, "chunks": chunks, "contiguous": contiguous, "ended": ended}, nil
}
