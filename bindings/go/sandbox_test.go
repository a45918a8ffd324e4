package opensandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The tests talk to a real server: run them through scripts/with-server.sh (make
// test-go), which sets OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY.
func needServer(t *testing.T) {
	t.Helper()
	if os.Getenv("OPEN_SANDBOX_DOMAIN") == "" {
		t.Skip("OPEN_SANDBOX_DOMAIN not set (run through scripts/with-server.sh)")
	}
}

func testSandbox(t *testing.T) *Sandbox {
	t.Helper()
	needServer(t)
	ctx := context.Background()
	sb, err := CreateSandbox(ctx, ConnectionConfig{}, SandboxCreateOptions{Image: "ubuntu:22.04", Metadata: map[string]string{"suite": "go"}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		_ = sb.Kill(context.Background())
		_ = sb.Close()
	})
	return sb
}

func TestConfigDefaultsAndEnv(t *testing.T) {
	t.Setenv("OPEN_SANDBOX_DOMAIN", "example.test:1234")
	t.Setenv("OPEN_SANDBOX_API_KEY", "k1")
	c := ConnectionConfig{}
	if c.GetDomain() != "example.test:1234" || c.GetAPIKey() != "k1" || c.GetProtocol() != "http" {
		t.Fatalf("env fallbacks: %q %q %q", c.GetDomain(), c.GetAPIKey(), c.GetProtocol())
	}
	if c.GetBaseURL() != "http://example.test:1234" || c.GetRequestTimeout() != DefaultRequestTimeout {
		t.Fatalf("base url %q timeout %v", c.GetBaseURL(), c.GetRequestTimeout())
	}
	c = ConnectionConfig{Domain: "https://h.test/", AuthHeader: "X-API-Key"}
	if c.GetBaseURL() != "https://h.test" || c.GetAuthHeader() != "X-API-Key" {
		t.Fatalf("%q %q", c.GetBaseURL(), c.GetAuthHeader())
	}
	o := c.sessionConnection()
	if o["api_key"] != nil || o["headers"].(map[string]string)["X-API-Key"] != "k1" {
		t.Fatalf("custom auth header not mapped: %v", o)
	}
	if OctalMode(0o755) != 755 {
		t.Fatal("OctalMode")
	}
}

func TestArgumentErrors(t *testing.T) {
	_, err := CreateSandbox(context.Background(), ConnectionConfig{}, SandboxCreateOptions{})
	var ia *InvalidArgumentError
	if !errors.As(err, &ia) {
		t.Fatalf("want InvalidArgumentError, got %v", err)
	}
	_, err = ConnectSandbox(context.Background(), ConnectionConfig{}, "")
	if !errors.As(err, &ia) {
		t.Fatalf("want InvalidArgumentError, got %v", err)
	}
	// Nothing listens on port 9: a connection error of the core.
	m := NewSandboxManager(ConnectionConfig{Domain: "127.0.0.1:9"})
	defer m.Close()
	_, err = m.GetSandboxInfo(context.Background(), "x")
	var e *Error
	if !errors.As(err, &e) || e.Kind != "connection" {
		t.Fatalf("want connection error, got %#v", err)
	}
	// A cancelled context never reaches the network.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.GetSandboxInfo(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestLifecycleAndErrors(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	info, err := sb.GetInfo(ctx)
	if err != nil || info.ID != sb.ID() || info.Status.State != StateRunning || info.Metadata["suite"] != "go" {
		t.Fatalf("get info: %+v %v", info, err)
	}
	if !sb.IsHealthy(ctx) {
		t.Fatal("not healthy")
	}
	r, err := sb.Renew(ctx, 20*time.Minute)
	if err != nil || time.Until(r.ExpiresAt) < 15*time.Minute {
		t.Fatalf("renew: %+v %v", r, err)
	}
	m := NewSandboxManager(ConnectionConfig{})
	defer m.Close()
	page, err := m.ListSandboxInfos(ctx, ListOptions{Metadata: map[string]string{"suite": "go"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range page.Items {
		found = found || s.ID == sb.ID()
	}
	if !found {
		t.Fatalf("sandbox not listed: %+v", page)
	}
	_, err = m.GetSandboxInfo(ctx, "no-such-sandbox")
	var api *APIError
	if !errors.As(err, &api) || api.StatusCode != 404 || api.Response.Code == "" || api.RequestID == "" {
		t.Fatalf("want a 404 APIError with code and request id, got %#v", err)
	}
	if api.ErrorKind() != "not_found" {
		t.Fatalf("kind %q", api.ErrorKind())
	}
	other, err := ConnectSandbox(ctx, ConnectionConfig{}, sb.ID(), ReadyOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ex, err := other.RunCommand(ctx, "echo via-connect", nil)
	if err != nil || ex.Text() != "via-connect" {
		t.Fatalf("run via connect: %+v %v", ex, err)
	}
}

func TestCommandsHandlersAndCancellation(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	var events []string
	h := &ExecutionHandlers{
		OnInit:     func(ExecutionInit) error { events = append(events, "init"); return nil },
		OnStdout:   func(m OutputMessage) error { events = append(events, "stdout:"+m.Text); return nil },
		OnStderr:   func(m OutputMessage) error { events = append(events, "stderr:"+m.Text); return nil },
		OnError:    func(e ExecutionError) error { events = append(events, "error:"+e.Value); return nil },
		OnComplete: func(ExecutionComplete) error { events = append(events, "complete"); return nil },
	}
	ex, err := sb.RunCommandWithOpts(ctx, RunCommandRequest{Command: "echo $A; sleep 0.2; echo oops >&2; exit 3", Envs: map[string]string{"A": "hi"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if ex.ExitCode == nil || *ex.ExitCode != 3 || ex.Error == nil || ex.Error.Name != "CommandExecError" {
		t.Fatalf("exit: %+v", ex)
	}
	if strings.Join(events, ",") != "init,stdout:hi,stderr:oops,error:3" {
		t.Fatalf("events: %v", events)
	}
	ex, err = sb.RunCommand(ctx, "true", nil)
	if err != nil || ex.ExitCode == nil || *ex.ExitCode != 0 || ex.Complete == nil {
		t.Fatalf("true: %+v %v", ex, err)
	}

	// A handler error aborts the run and is returned as is.
	stop := errors.New("stop")
	_, err = sb.RunCommand(ctx, "seq 1 100000", &ExecutionHandlers{OnStdout: func(OutputMessage) error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("want handler error, got %v", err)
	}

	// Cancellation through the context reaches the core and returns promptly, and
	// nothing is left running on the Go side.
	before := runtime.NumGoroutine()
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = sb.RunCommand(tctx, "sleep 30", nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
		t.Fatalf("want DeadlineExceeded quickly, got %v after %v", err, time.Since(t0))
	}
	time.Sleep(100 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("goroutines leaked: %d -> %d", before, after)
	}

	// Sessions keep state.
	sess, err := sb.CreateSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.RunInSession(ctx, sess.ID, RunInSessionRequest{Command: "X=42"}, nil); err != nil {
		t.Fatal(err)
	}
	ex, err = sb.RunInSession(ctx, sess.ID, RunInSessionRequest{Command: "echo $X"}, nil)
	if err != nil || ex.Text() != "42" {
		t.Fatalf("session: %+v %v", ex, err)
	}
	if err := sb.DeleteSession(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}

	// Background command, status and logs.
	ex, err = sb.RunCommandWithOpts(ctx, RunCommandRequest{Command: "echo bg; sleep 0.2", Background: true}, nil)
	if err != nil || ex.ID == "" || ex.ExitCode != nil {
		t.Fatalf("background: %+v %v", ex, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := sb.GetCommandStatus(ctx, ex.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("background command still running")
		}
		time.Sleep(100 * time.Millisecond)
	}
	logs, err := sb.GetCommandLogs(ctx, ex.ID, nil)
	if err != nil || !strings.Contains(logs.Output, "bg") {
		t.Fatalf("logs: %+v %v", logs, err)
	}
}

// TestUploadRegularFile: an *os.File of a regular file is read by the library from a
// duplicate of its descriptor, from the file's current offset, which ends at EOF.
func TestUploadRegularFile(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	data := make([]byte, 3<<20+12345) // more than one upload chunk, not a multiple of it
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	path := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const start = 1000
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if err := sb.UploadFile(ctx, f, UploadFileOptions{Metadata: FileMetadata{Path: "/tmp/go/regular.bin", Mode: 600}}); err != nil {
		t.Fatal(err)
	}
	if pos, err := f.Seek(0, io.SeekCurrent); err != nil || pos != int64(len(data)) {
		t.Fatalf("offset after upload: %d %v, want %d", pos, err, len(data))
	}
	rc, err := sb.DownloadFile(ctx, "/tmp/go/regular.bin", "")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	_ = rc.Close()
	if err != nil || n != int64(len(data)-start) || !bytes.Equal(h.Sum(nil), sha(data[start:])) {
		t.Fatalf("download: %d bytes (want %d), %v", n, len(data)-start, err)
	}
	info, err := sb.GetFileInfo(ctx, "/tmp/go/regular.bin")
	if err != nil || info["/tmp/go/regular.bin"].Mode != 600 {
		t.Fatalf("info: %+v %v", info, err)
	}
	// The caller's descriptor is still usable (the library closed only its duplicate).
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, data[:16]) {
		t.Fatalf("reading the file after the upload: %v", err)
	}
	// At EOF: an empty file.
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if err := sb.UploadFile(ctx, f, UploadFileOptions{Metadata: FileMetadata{Path: "/tmp/go/empty.bin"}}); err != nil {
		t.Fatal(err)
	}
	if info, err := sb.GetFileInfo(ctx, "/tmp/go/empty.bin"); err != nil || info["/tmp/go/empty.bin"].Size != 0 {
		t.Fatalf("empty: %+v %v", info, err)
	}
	// A failed upload (a directory as the destination's parent is a file) leaves the
	// offset where it was.
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	err = sb.UploadFile(ctx, f, UploadFileOptions{Metadata: FileMetadata{Path: "/tmp/go/regular.bin/below"}})
	if err == nil {
		t.Fatal("upload below a regular file succeeded")
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != start {
		t.Fatalf("offset after a failed upload: %d, want %d", pos, start)
	}
	// A cancelled context: the context's error, the offset untouched.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := sb.UploadFile(cctx, f, UploadFileOptions{Metadata: FileMetadata{Path: "/tmp/go/c.bin"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upload: %v", err)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != start {
		t.Fatalf("offset after a cancelled upload: %d, want %d", pos, start)
	}
}

func TestFilesRoundTrip(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB
	err := sb.UploadFile(ctx, bytes.NewReader(data), UploadFileOptions{Metadata: FileMetadata{Path: "/tmp/go/blob.bin", Mode: 644}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := sb.GetFileInfo(ctx, "/tmp/go/blob.bin")
	if err != nil || info["/tmp/go/blob.bin"].Size != int64(len(data)) || info["/tmp/go/blob.bin"].Mode != 644 {
		t.Fatalf("info: %+v %v", info, err)
	}
	rc, err := sb.DownloadFile(ctx, "/tmp/go/blob.bin", "")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	_ = rc.Close()
	if err != nil || n != int64(len(data)) || !bytes.Equal(h.Sum(nil), sha(data)) {
		t.Fatalf("download: %d bytes, %v", n, err)
	}
	rc, err = sb.DownloadFile(ctx, "/tmp/go/blob.bin", "bytes=16-31")
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(part) != "0123456789abcdef" {
		t.Fatalf("range: %q", part)
	}
	_, err = sb.DownloadFile(ctx, "/tmp/go/missing", "")
	var api *APIError
	if !errors.As(err, &api) || api.StatusCode != 404 {
		t.Fatalf("want 404, got %v", err)
	}
	if err := sb.CreateDirectory(ctx, "/tmp/go/dir", 755); err != nil {
		t.Fatal(err)
	}
	if err := sb.MoveFiles(ctx, MoveRequest{{Src: "/tmp/go/blob.bin", Dest: "/tmp/go/dir/b.bin"}}); err != nil {
		t.Fatal(err)
	}
	list, err := sb.ListDirectory(ctx, "/tmp/go/dir")
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := sb.UploadFile(ctx, strings.NewReader("hello localhost\n"), UploadFileOptions{Metadata: FileMetadata{Path: "/tmp/go/r.txt"}}); err != nil {
		t.Fatal(err)
	}
	rr, err := sb.ReplaceInFilesDetailed(ctx, ReplaceRequest{"/tmp/go/r.txt": {Old: "localhost", New: "example.com"}})
	if err != nil || rr["/tmp/go/r.txt"].ReplacedCount != 1 {
		t.Fatalf("replace: %+v %v", rr, err)
	}
	found, err := sb.SearchFiles(ctx, "/tmp/go", "*.txt")
	if err != nil || len(found) != 1 {
		t.Fatalf("search: %+v %v", found, err)
	}
	if err := sb.DeleteDirectory(ctx, "/tmp/go/dir"); err != nil {
		t.Fatal(err)
	}
}

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func TestWatchMetricsStopsWithContext(t *testing.T) {
	sb := testSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := sb.WatchMetrics(ctx, func(m Metrics) error {
		n++
		if m.CPUCount <= 0 {
			t.Errorf("bad sample %+v", m)
		}
		if n == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Fatalf("watch: n=%d err=%v", n, err)
	}
}

func TestCodeInterpreterContexts(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	ci, err := CreateCodeInterpreter(ctx, ConnectionConfig{}, CodeInterpreterCreateOptions{Entrypoint: DefaultEntrypoint})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ci.Kill(ctx); _ = ci.Close() }()
	info, err := ci.GetInfo(ctx)
	if err != nil || info.ExpiresAt == nil || time.Until(*info.ExpiresAt) < 14*time.Minute {
		t.Fatalf("TTL 900 s expected: %+v %v", info, err)
	}
	c, err := ci.CreateContext(ctx, CreateContextRequest{Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ci.ExecuteInContext(ctx, c.ID, "python", "x = 41", nil); err != nil {
		t.Fatal(err)
	}
	ex, err := ci.ExecuteInContext(ctx, c.ID, "python", "x + 1", nil)
	if err != nil || len(ex.Results) != 1 || ex.Results[0].Text() != "42" || ex.ExitCode != nil {
		t.Fatalf("result: %+v %v", ex, err)
	}
	ex, err = ci.Execute(ctx, "python", "1/0", nil)
	if err != nil || ex.Error == nil || ex.Error.Name != "ZeroDivisionError" {
		t.Fatalf("error: %+v %v", ex, err)
	}
}

// Cancelling a foreground run interrupts the command on the server (the one rule of
// every language, bindings/common): what it would have done later never happens.
func TestCancelInterruptsTheCommand(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := sb.RunCommand(tctx, "sleep 1.5; echo late > /tmp/after-cancel", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	time.Sleep(2500 * time.Millisecond)
	ex, err := sb.RunCommand(ctx, "test -e /tmp/after-cancel && echo present || echo absent", nil)
	if err != nil || ex.Text() != "absent" {
		t.Fatalf("the cancelled command kept running: %+v %v", ex, err)
	}
}

func TestSetEnvReachesLaterCommandsAndNewSessions(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	if err := sb.SetEnv(ctx, "OSB_PLAIN", "hello"); err != nil {
		t.Fatal(err)
	}
	quoted := `it's a "test" $(id) ` + "`id`"
	if err := sb.SetEnv(ctx, "OSB_QUOTED", quoted); err != nil {
		t.Fatal(err)
	}
	ex, err := sb.RunCommand(ctx, `printf '%s|%s' "$OSB_PLAIN" "$OSB_QUOTED"`, nil)
	if err != nil || ex.Text() != "hello|"+quoted {
		t.Fatalf("run: %q %v", ex.Text(), err)
	}
	session, err := sb.CreateSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sb.DeleteSession(ctx, session.ID) }()
	ex, err = sb.RunInSession(ctx, session.ID, RunInSessionRequest{Command: `echo "$OSB_PLAIN"`}, nil)
	if err != nil || len(ex.Stdout) != 1 || strings.TrimSuffix(ex.Stdout[0].Text, "\n") != "hello" {
		t.Fatalf("session: %+v %v", ex, err)
	}

	for _, key := range []string{"", "1A", "A-B", "A B", "A=B"} {
		var ia *InvalidArgumentError
		if err := sb.SetEnv(ctx, key, "v"); !errors.As(err, &ia) {
			t.Fatalf("key %q: want InvalidArgumentError, got %v", key, err)
		}
	}
	var ia *InvalidArgumentError
	if err := sb.SetEnv(ctx, "K", "a\x00b"); !errors.As(err, &ia) {
		t.Fatalf("NUL: want InvalidArgumentError, got %v", err)
	}
	if err := sb.SetEnv(ctx, "K", "\xff"); !errors.As(err, &ia) {
		t.Fatalf("invalid UTF-8: want InvalidArgumentError, got %v", err)
	}
}

// TestOneCallRunEqualsTheStreamedRun: without handlers a run is one native call of the
// run op; with them it takes the start + batch path. Both give the same Execution, and
// cancelling either interrupts the command on the server.
func TestOneCallRunEqualsTheStreamedRun(t *testing.T) {
	sb := testSandbox(t)
	const cmd = "echo one; echo two >&2; echo 'h\u00e9llo'; exit 3"
	shape := func(x *Execution) string {
		var out, errs []string
		stamped := true
		for _, m := range x.Stdout {
			out = append(out, m.Text)
			stamped = stamped && m.Timestamp > 0
		}
		for _, m := range x.Stderr {
			errs = append(errs, m.Text)
		}
		code := "nil"
		if x.ExitCode != nil {
			code = fmt.Sprint(*x.ExitCode)
		}
		e := "-"
		if x.Error != nil {
			e = x.Error.Name + ":" + x.Error.Value
		}
		return fmt.Sprintf("%s|%s|%s|%v|%s|%v|%v", code, strings.Join(out, ","), strings.Join(errs, ","),
			stamped, e, x.ID != "", x.Complete != nil)
	}
	var ops []string
	prev := opTrace
	opTrace = func(op string, args map[string]any) {
		if prev != nil {
			prev(op, args)
		}
		if strings.HasPrefix(op, "commands.") {
			ops = append(ops, op)
		}
	}
	defer func() { opTrace = prev }() // on a failure before the runs below
	once, err := sb.RunCommand(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	onInit := &ExecutionHandlers{OnInit: func(ExecutionInit) error { return nil }}
	streamed, err := sb.RunCommand(context.Background(), cmd, onInit)
	if err != nil {
		t.Fatal(err)
	}
	// Traced on this goroutine only: the runs below overlap (-race).
	opTrace = prev
	if strings.Join(ops, ",") != "commands.run,commands.start" {
		t.Fatalf("ops %v, want the run op then the start op", ops)
	}
	if shape(once) != shape(streamed) {
		t.Fatalf("one call %s, streamed %s", shape(once), shape(streamed))
	}
	if want := "3|one,h\u00e9llo|two|true|CommandExecError:3|true|false"; shape(once) != want {
		t.Fatalf("got %s, want %s", shape(once), want)
	}
	bg, err := sb.RunCommandWithOpts(context.Background(), RunCommandRequest{Command: "sleep 0.2", Background: true}, nil)
	if err != nil || bg.ExitCode != nil || bg.ID == "" {
		t.Fatalf("background: %+v %v", bg, err)
	}

	for _, h := range []*ExecutionHandlers{nil, onInit} {
		marker := fmt.Sprintf("/tmp/cancel-%v.pid", h != nil)
		probe := "p=$(cat " + marker + " 2>/dev/null) && kill -0 $p"
		alive := func() bool {
			x, err := sb.RunCommand(context.Background(), probe, nil)
			return err == nil && x.ExitCode != nil && *x.ExitCode == 0
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := sb.RunCommand(ctx, "echo $$ > "+marker+"; sleep 30", h)
			done <- err
		}()
		waitFor(t, "the command to start", alive)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("handlers %v: want Canceled, got %v", h != nil, err)
		}
		waitFor(t, fmt.Sprintf("the cancelled command to stop (handlers: %v)", h != nil), func() bool { return !alive() })
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 50; i++ {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
