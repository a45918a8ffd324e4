package opensandbox

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Every ConnectionConfig option either reaches the core's connection args or fails
// with an *InvalidArgumentError.
func TestEndpointCacheOptionsReachTheCore(t *testing.T) {
	o := (&ConnectionConfig{Domain: "h:1"}).sessionConnection()
	if o["endpoint_cache_ttl_s"] != 600.0 || o["endpoint_cache_size"] != 1024 {
		t.Fatalf("official defaults: %v", o)
	}
	o = (&ConnectionConfig{Domain: "h:1", EndpointCacheTTL: 5 * time.Second, EndpointCacheSize: 7}).sessionConnection()
	if o["endpoint_cache_ttl_s"] != 5.0 || o["endpoint_cache_size"] != 7 {
		t.Fatalf("set values: %v", o)
	}
	o = (&ConnectionConfig{Domain: "h:1", EndpointCacheTTL: 5 * time.Second, EndpointCacheDisabled: true}).sessionConnection()
	if o["endpoint_cache_ttl_s"] != 0.0 || o["endpoint_cache_size"] != 0 {
		t.Fatalf("disabled: %v", o)
	}
	// The low-level lifecycle client caches in Go (NewLifecycleClientWithCache), not in the core.
	lc := NewLifecycleClient("http://h:1/v1", "k")
	cfg := lc.connectionConfig()
	if o := cfg.sessionConnection(); o["endpoint_cache_size"] != 0 {
		t.Fatalf("lifecycle client: %v", o)
	}
	for _, c := range []ConnectionConfig{{EndpointCacheTTL: -time.Second}, {EndpointCacheSize: -1}} {
		var ia *InvalidArgumentError
		if err := c.validate(); !errors.As(err, &ia) || !strings.HasPrefix(ia.Field, "EndpointCache") {
			t.Fatalf("%+v: want InvalidArgumentError, got %v", c, err)
		}
	}
}

func TestTransportMapsDialTimeoutAndRefusesPoolTuning(t *testing.T) {
	def := DefaultTransportConfig()
	ok := []ConnectionConfig{{}, {Transport: &def}, {Transport: &TransportConfig{DialTimeout: 3 * time.Second}}}
	for _, c := range ok {
		if err := c.validate(); err != nil {
			t.Fatalf("%+v: %v", c.Transport, err)
		}
	}
	o := ok[2].sessionConnection()
	if o["connect_timeout_s"] != 3.0 {
		t.Fatalf("DialTimeout not mapped: %v", o)
	}
	if _, set := ok[0].sessionConnection()["connect_timeout_s"]; set {
		t.Fatal("connect_timeout_s sent without a Transport")
	}
	bad := map[string]TransportConfig{
		"Transport.MaxIdleConnsPerHost":           {MaxIdleConnsPerHost: 64},
		"Transport.MaxConnsPerHost":               {MaxConnsPerHost: 4},
		"Transport.IdleConnTimeout":               {IdleConnTimeout: time.Minute},
		"Transport.KeepAlive":                     {KeepAlive: time.Second},
		"Transport.AllowWeakServerCertKeyLengths": {AllowWeakServerCertKeyLengths: true},
	}
	for field, tc := range bad {
		tc := tc
		c := ConnectionConfig{Transport: &tc}
		var ia *InvalidArgumentError
		if err := c.validate(); !errors.As(err, &ia) || ia.Field != field {
			t.Fatalf("%s: want InvalidArgumentError, got %v", field, err)
		}
		// Refused before any request: no server is needed to see it.
		if _, err := CreateSandbox(context.Background(), ConnectionConfig{Domain: "127.0.0.1:9", Transport: &tc},
			SandboxCreateOptions{Image: "x"}); !errors.As(err, &ia) {
			t.Fatalf("%s: CreateSandbox want InvalidArgumentError, got %v", field, err)
		}
		if _, err := NewSandboxManager(c).ListSandboxInfos(context.Background(), ListOptions{}); !errors.As(err, &ia) {
			t.Fatalf("%s: manager want InvalidArgumentError, got %v", field, err)
		}
	}
}

func TestHTTPClientIsCheckedAndItsTimeoutTaken(t *testing.T) {
	c := ConnectionConfig{HTTPClient: &http.Client{Timeout: 7 * time.Second}}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if o := c.sessionConnection(); o["request_timeout_s"] != 7.0 {
		t.Fatalf("timeout: %v", o)
	}
	c = ConnectionConfig{HTTPClient: &http.Client{Transport: roundTripper{}}}
	var ia *InvalidArgumentError
	if err := c.validate(); !errors.As(err, &ia) || ia.Field != "HTTPClient" {
		t.Fatalf("want InvalidArgumentError, got %v", err)
	}
}

func TestEndpointHostRewrite(t *testing.T) {
	c := ConnectionConfig{EndpointHostRewrite: map[string]string{"host.docker.internal": "localhost"}}
	ep := c.rewriteEndpoint(&Endpoint{Endpoint: "host.docker.internal:4000/p/host.docker.internal"})
	if ep.Endpoint != "localhost:4000/p/localhost" {
		t.Fatalf("rewrite: %q", ep.Endpoint)
	}
	// A Sandbox cannot honour it (the core reaches execd itself): refused, not ignored.
	var ia *InvalidArgumentError
	_, err := CreateSandbox(context.Background(), ConnectionConfig{Domain: "127.0.0.1:9", EndpointHostRewrite: c.EndpointHostRewrite},
		SandboxCreateOptions{Image: "x"})
	if !errors.As(err, &ia) || ia.Field != "EndpointHostRewrite" {
		t.Fatalf("CreateSandbox: want InvalidArgumentError, got %v", err)
	}
	if _, err := ConnectSandbox(context.Background(), ConnectionConfig{Domain: "127.0.0.1:9", EndpointHostRewrite: c.EndpointHostRewrite}, "id"); !errors.As(err, &ia) {
		t.Fatalf("ConnectSandbox: want InvalidArgumentError, got %v", err)
	}
}

// Against the server: the manager rewrites the endpoints it returns, and with the
// endpoint cache on (the default) a sandbox still works after pause and resume.
func TestEndpointCacheAndRewriteAgainstTheServer(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	cfg := ConnectionConfig{EndpointCacheTTL: 10 * time.Minute, EndpointCacheSize: 16}
	sb, err := CreateSandbox(ctx, cfg, SandboxCreateOptions{Image: "ubuntu:22.04", Metadata: map[string]string{"suite": "go"}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer func() { _ = sb.Kill(context.Background()); _ = sb.Close() }()
	ep, err := sb.GetEndpoint(ctx, DefaultExecdPort)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.SplitN(strings.SplitN(ep.Endpoint, "/", 2)[0], ":", 2)[0]
	m := NewSandboxManager(ConnectionConfig{EndpointHostRewrite: map[string]string{host: "rewritten.test"}})
	defer m.Close()
	rep, err := m.GetEndpoint(ctx, sb.ID(), DefaultExecdPort)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(ep.Endpoint, host, "rewritten.test", 1); rep.Endpoint != want {
		t.Fatalf("rewritten endpoint %q, want %q", rep.Endpoint, want)
	}
	if _, err := sb.RunCommand(ctx, "echo before", nil); err != nil {
		t.Fatalf("run before pause: %v", err)
	}
	if err := sb.Pause(ctx); err != nil {
		t.Fatalf("pause: %v", err)
	}
	resumed, err := sb.Resume(ctx)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	defer resumed.Close()
	for _, s := range []*Sandbox{resumed} {
		ex, err := s.RunCommand(ctx, "echo after", nil)
		if err != nil {
			t.Fatalf("run after resume: %v", err)
		}
		if got := ex.Text(); !strings.Contains(got, "after") {
			t.Fatalf("output %q", got)
		}
	}
}
