package opensandbox

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

type roundTripper struct{}

func (roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("unused")
}

// Options the core cannot honour fail every call loudly; harmless ones are taken.
func TestWithHTTPClientIsHonouredOrRejected(t *testing.T) {
	ok := []*http.Client{
		{},
		{Transport: DefaultTransport(), Timeout: 3 * time.Second},
		{Transport: &http.Transport{}},
	}
	for _, c := range ok {
		cl := NewClient("http://h:1", "k", lifecycleAuthHeader, WithHTTPClient(c))
		if cl.optErr != nil {
			t.Fatalf("%+v rejected: %v", c, cl.optErr)
		}
	}
	cl := NewClient("http://h:1", "k", lifecycleAuthHeader, WithHTTPClient(&http.Client{Timeout: 3 * time.Second}))
	cfg := cl.connectionConfig()
	if cl.timeout == nil || *cl.timeout != 3*time.Second || cfg.GetRequestTimeout() != 3*time.Second {
		t.Fatalf("the client's timeout was not taken: %v", cl.timeout)
	}
	bad := []*http.Client{
		{Transport: roundTripper{}},
		{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
		{Transport: &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return nil, nil }}},
		{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }},
	}
	for _, c := range bad {
		lc := NewLifecycleClient("http://127.0.0.1:9/v1", "k", WithHTTPClient(c))
		_, err := lc.GetSandbox(context.Background(), "x")
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != "WithHTTPClient" {
			t.Fatalf("%+v: want InvalidArgumentError, got %v", c, err)
		}
		ex := NewExecdClient("http://127.0.0.1:9", "t", WithHTTPClient(c))
		if err := ex.Ping(context.Background()); !errors.As(err, &ia) {
			t.Fatalf("execd %+v: want InvalidArgumentError, got %v", c, err)
		}
	}
}

// The low-level clients' keys travel in the right place: lifecycle as the API key,
// execd/egress tokens as endpoint headers (never as the lifecycle key).
func TestLowLevelClientAuth(t *testing.T) {
	lc := NewLifecycleClient("http://h:1/v1", "key1", WithHeaders(map[string]string{"X-A": "1"}), WithRetry(DefaultRetryConfig()))
	cfg := lc.connectionConfig()
	conn := cfg.sessionConnection()
	if conn["api_key"] != "key1" || conn["domain"] != "http://h:1/v1" || conn["retry"].(map[string]any)["max_retries"] != 3 {
		t.Fatalf("lifecycle connection: %v", conn)
	}
	custom := NewLifecycleClient("http://h:1/v1", "key1", WithAuthHeader("X-API-Key"))
	cfg = custom.connectionConfig()
	conn = cfg.sessionConnection()
	if conn["api_key"] != nil || conn["headers"].(map[string]string)["X-API-Key"] != "key1" {
		t.Fatalf("custom auth header: %v", conn)
	}
	ex := NewExecdClient("http://h:2", "tok", WithHeaders(map[string]string{"X-B": "2"}))
	args := directArgs(ex.client, false)
	ep := args["execd"].(map[string]any)
	h := ep["headers"].(map[string]string)
	if ep["endpoint"] != "http://h:2" || h[execdAuthHeader] != "tok" || h["X-B"] != "2" || args["egress"] != nil {
		t.Fatalf("execd args: %v", args)
	}
	if c := args["connection"].(map[string]any); c["api_key"] != nil || c["headers"] != nil {
		t.Fatalf("execd token leaked into the connection: %v", c)
	}
	eg := NewEgressClient("http://h:3", "etok")
	args = directArgs(eg.Client, true)
	if args["egress"].(map[string]any)["headers"].(map[string]string)[egressAuthHeader] != "etok" {
		t.Fatalf("egress args: %v", args)
	}
}

func TestClientIPHeader(t *testing.T) {
	h := applyClientIP(nil, "10.1.2.3")
	if h[clientIPHeader] != "10.1.2.3" {
		t.Fatalf("%v", h)
	}
	h = applyClientIP(map[string]string{"open-sandbox-client-ip": "1.1.1.1"}, "10.1.2.3")
	if len(h) != 1 || h["open-sandbox-client-ip"] != "1.1.1.1" {
		t.Fatalf("a caller's value was overridden: %v", h)
	}
	if applyClientIP(nil, "") != nil {
		t.Fatal("empty ip added a header")
	}
	if interfaceRank("eth0") >= interfaceRank("wlan0") || !virtualInterface("docker0") || virtualInterface("eth1") {
		t.Fatal("interface ranking")
	}
}

// File views add their scope to file ops only, and identities are bounded.
func TestFileScopes(t *testing.T) {
	sb := &Sandbox{id: "s", opH: 7}
	fs, err := sb.FilesWithIdentity(1000, 1001)
	if err != nil {
		t.Fatal(err)
	}
	view := fs.(*ExecdClient).sb
	if h, err := view.opHandle(context.Background()); err != nil || h != 7 {
		t.Fatalf("view handle %d %v", h, err)
	}
	for op, want := range map[string]bool{"files.read_file": true, "upload.open": true, "download.open": true, "commands.start": false, "isolation.get": false} {
		args := map[string]any{}
		view.scopeArgs(op, args)
		id, ok := args["identity"].(map[string]any)
		if ok != want || (ok && (id["uid"] != uint32(1000) || id["gid"] != uint32(1001))) {
			t.Fatalf("%s: %v", op, args)
		}
	}
	if _, err := sb.FilesWithIdentity(4294967295, 0); err == nil {
		t.Fatal("uid 2^32-1 accepted")
	}
	iso := sb.newIsolationSession(&IsolatedSessionInfo{SessionID: "abc"})
	args := map[string]any{}
	iso.Files().sb.scopeArgs("files.list_directory", args)
	if args["isolated_session"] != "abc" {
		t.Fatalf("isolated files: %v", args)
	}
	_ = view.Close() // a view never releases its owner's handle
	if h, _ := sb.opHandle(context.Background()); h != 7 {
		t.Fatal("closing a view released the sandbox handle")
	}
}

// Raw events keep execd's JSON shape.
func TestRawEvents(t *testing.T) {
	text := "hi"
	ev := rawEvent(&wireEvent{Type: "stdout", Text: &text, Timestamp: 5})
	var m map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil || ev.Event != "stdout" || m["text"] != "hi" || m["timestamp"] != 5.0 {
		t.Fatalf("%+v %v", ev, err)
	}
	ev = rawEvent(&wireEvent{Type: "error", Name: "E", Value: "1"})
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil || m["error"].(map[string]any)["ename"] != "E" {
		t.Fatalf("%+v %v", ev, err)
	}
	if !json.Valid([]byte(rawEvent(&wireEvent{Type: "execution_complete", TimeMs: 3}).Data)) {
		t.Fatal("invalid JSON")
	}
}

// Uploads of known length announce it (Content-Length instead of chunked).
func TestKnownLength(t *testing.T) {
	if n, ok := knownLength(strings.NewReader("hello")); !ok || n != 5 {
		t.Fatalf("strings.Reader: %d %v", n, ok)
	}
	f, err := os.CreateTemp(t.TempDir(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("0123456789"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(4, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n, ok := knownLength(f); !ok || n != 6 {
		t.Fatalf("file at offset 4: %d %v", n, ok)
	}
	if _, ok := knownLength(io.LimitReader(f, 3)); ok {
		t.Fatal("an opaque reader has no known length")
	}
}
