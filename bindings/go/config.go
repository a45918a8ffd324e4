package opensandbox

import (
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// ConnectionConfig holds the configuration for connecting to an OpenSandbox server.
// Unset fields fall back to OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_PROTOCOL and
// OPEN_SANDBOX_API_KEY, then to the defaults.
type ConnectionConfig struct {
	// Domain is the server address (e.g. "localhost:8080"); a scheme in it wins
	// over Protocol.
	Domain string
	// Protocol is "http" or "https".
	Protocol string
	// APIKey is the authentication token.
	APIKey string
	// UseServerProxy routes execd/egress requests through the server.
	UseServerProxy bool
	// RequestTimeout bounds each ordinary request. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Headers are added to every request.
	Headers map[string]string
	// HTTPClient is checked as WithHTTPClient checks it: its Timeout is taken (when
	// RequestTimeout is unset); a client the core cannot reproduce (custom
	// RoundTripper, cookie jar, redirect policy, own TLS roots or proxy function)
	// makes CreateSandbox/ConnectSandbox/ResumeSandbox and the manager fail with an
	// *InvalidArgumentError.
	HTTPClient *http.Client
	// AuthHeader overrides the lifecycle auth header name (default
	// "OPEN-SANDBOX-API-KEY").
	AuthHeader string
	// Retry enables retries of transient failures; nil means no retries.
	Retry *RetryConfig
	// Transport tunes the connection pool. DialTimeout is the core's connect
	// timeout; the other fields must be zero or their DefaultTransportConfig value
	// (the core's own pool then applies): any other value fails with an
	// *InvalidArgumentError, as it cannot be honoured.
	Transport *TransportConfig
	// EndpointHostRewrite maps hosts in endpoint URLs returned by the server to
	// replacements (official semantics: every occurrence of a key in the URL is
	// replaced). SandboxManager.GetEndpoint returns rewritten endpoints. A Sandbox
	// reaches execd/egress inside the core at the address the server returned, so
	// opening one (CreateSandbox, ConnectSandbox, ResumeSandbox) with a non-empty
	// rewrite fails with an *InvalidArgumentError instead of ignoring it; use
	// UseServerProxy instead.
	EndpointHostRewrite map[string]string
	// EndpointCacheTTL and EndpointCacheSize bound the core's endpoint cache
	// (zero: the official defaults, 600 s and 1024 entries; negative: an
	// *InvalidArgumentError); EndpointCacheDisabled turns it off. Resolved
	// endpoints of a sandbox are reused until the TTL ends; killing, pausing or
	// resuming a sandbox drops its entries.
	EndpointCacheTTL      time.Duration
	EndpointCacheSize     int
	EndpointCacheDisabled bool
	// DisableMetrics turns off the official SDK's lifecycle latency reports
	// (POST /v1/metrics/events). This package sends no such reports, so it is
	// always as if set.
	DisableMetrics bool
}

// RetryConfig configures retries with exponential backoff.
type RetryConfig struct {
	MaxRetries     int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	// Jitter randomises the delays (0.25 = ±25 % in the official SDK). The core's
	// retry policy has jitter on or off: any value above 0 switches it on.
	Jitter               float64
	RetryableStatusCodes []int
}

// DefaultRetryConfig returns the official SDK's retry policy: 3 retries of
// 429/502/503/504, 500 ms initial backoff doubling up to 30 s, with jitter.
func DefaultRetryConfig() RetryConfig {
	return RetryConfig{
		MaxRetries:           3,
		InitialBackoff:       500 * time.Millisecond,
		MaxBackoff:           30 * time.Second,
		Multiplier:           2,
		Jitter:               0.25,
		RetryableStatusCodes: []int{429, 502, 503, 504},
	}
}

// TransportConfig tunes HTTP connection pooling. Through ConnectionConfig.Transport,
// DialTimeout is the core's connect timeout and the other fields must be zero or
// their DefaultTransportConfig value (see ConnectionConfig.Transport).
type TransportConfig struct {
	MaxIdleConns                  int
	MaxIdleConnsPerHost           int
	MaxConnsPerHost               int
	IdleConnTimeout               time.Duration
	TLSHandshakeTimeout           time.Duration
	DialTimeout                   time.Duration
	KeepAlive                     time.Duration
	AllowWeakServerCertKeyLengths bool
}

// DefaultTransportConfig returns the official SDK's pool settings.
func DefaultTransportConfig() TransportConfig {
	return TransportConfig{
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 10,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DialTimeout:         30 * time.Second,
		KeepAlive:           30 * time.Second,
	}
}

// NewTransport builds an *http.Transport from the config, for code that hands it
// to WithHTTPClient. This package's clients accept such a transport but do not use
// it: requests go through the native core's own HTTP stack (see WithHTTPClient).
func (tc TransportConfig) NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   tc.DialTimeout,
			KeepAlive: tc.KeepAlive,
		}).DialContext,
		MaxIdleConns:        tc.MaxIdleConns,
		MaxIdleConnsPerHost: tc.MaxIdleConnsPerHost,
		MaxConnsPerHost:     tc.MaxConnsPerHost,
		IdleConnTimeout:     tc.IdleConnTimeout,
		TLSHandshakeTimeout: tc.TLSHandshakeTimeout,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

// DefaultTransport returns DefaultTransportConfig().NewTransport().
func DefaultTransport() *http.Transport {
	return DefaultTransportConfig().NewTransport()
}

// GetDomain returns the configured domain, falling back to the environment and default.
func (c *ConnectionConfig) GetDomain() string {
	if c.Domain != "" {
		return c.Domain
	}
	if v := os.Getenv("OPEN_SANDBOX_DOMAIN"); v != "" {
		return v
	}
	return DefaultDomain
}

// GetProtocol returns the configured protocol, falling back to the environment and default.
func (c *ConnectionConfig) GetProtocol() string {
	if c.Protocol != "" {
		return c.Protocol
	}
	if v := os.Getenv("OPEN_SANDBOX_PROTOCOL"); v != "" {
		return v
	}
	return DefaultProtocol
}

// GetAPIKey returns the configured API key, falling back to the environment.
func (c *ConnectionConfig) GetAPIKey() string {
	if c.APIKey != "" {
		return c.APIKey
	}
	return os.Getenv("OPEN_SANDBOX_API_KEY")
}

// GetBaseURL returns the server base URL without /v1 (e.g. "http://localhost:8080").
func (c *ConnectionConfig) GetBaseURL() string {
	domain := c.GetDomain()
	if strings.HasPrefix(domain, "http://") || strings.HasPrefix(domain, "https://") {
		return strings.TrimRight(domain, "/")
	}
	return c.GetProtocol() + "://" + domain
}

// GetAuthHeader returns the auth header name of lifecycle requests.
func (c *ConnectionConfig) GetAuthHeader() string {
	if c.AuthHeader != "" {
		return c.AuthHeader
	}
	return "OPEN-SANDBOX-API-KEY"
}

// GetRequestTimeout returns the request timeout, defaulting to DefaultRequestTimeout.
func (c *ConnectionConfig) GetRequestTimeout() time.Duration {
	if c.RequestTimeout > 0 {
		return c.RequestTimeout
	}
	return DefaultRequestTimeout
}

// requestTimeout is GetRequestTimeout, with HTTPClient.Timeout used when
// RequestTimeout is unset.
func (c *ConnectionConfig) requestTimeout() time.Duration {
	if c.RequestTimeout <= 0 && c.HTTPClient != nil && c.HTTPClient.Timeout > 0 {
		return c.HTTPClient.Timeout
	}
	return c.GetRequestTimeout()
}

// rewriteEndpoint returns ep with EndpointHostRewrite applied to its Endpoint.
func (c *ConnectionConfig) rewriteEndpoint(ep *Endpoint) *Endpoint {
	if ep == nil || len(c.EndpointHostRewrite) == 0 {
		return ep
	}
	ep.Endpoint = c.RewriteEndpointURL(ep.Endpoint)
	return ep
}

// RewriteEndpointURL applies EndpointHostRewrite to an endpoint URL.
func (c *ConnectionConfig) RewriteEndpointURL(endpointURL string) string {
	for from, to := range c.EndpointHostRewrite {
		endpointURL = strings.ReplaceAll(endpointURL, from, to)
	}
	return endpointURL
}

// validate reports the options of c the core cannot honour, as an
// *InvalidArgumentError (nil when every option set takes effect).
func (c *ConnectionConfig) validate() error {
	if c.EndpointCacheTTL < 0 {
		return &InvalidArgumentError{Field: "EndpointCacheTTL", Message: "must not be negative"}
	}
	if c.EndpointCacheSize < 0 {
		return &InvalidArgumentError{Field: "EndpointCacheSize", Message: "must not be negative"}
	}
	if c.HTTPClient != nil {
		if err := checkHTTPClient(c.HTTPClient); err != nil {
			if ia, ok := err.(*InvalidArgumentError); ok {
				ia.Field = "HTTPClient"
			}
			return err
		}
	}
	if t := c.Transport; t != nil {
		if t.DialTimeout < 0 {
			return &InvalidArgumentError{Field: "Transport.DialTimeout", Message: "must not be negative"}
		}
		d := DefaultTransportConfig()
		for _, f := range []struct {
			name       string
			got, deflt int64
		}{
			{"MaxIdleConns", int64(t.MaxIdleConns), int64(d.MaxIdleConns)},
			{"MaxIdleConnsPerHost", int64(t.MaxIdleConnsPerHost), int64(d.MaxIdleConnsPerHost)},
			{"MaxConnsPerHost", int64(t.MaxConnsPerHost), int64(d.MaxConnsPerHost)},
			{"IdleConnTimeout", int64(t.IdleConnTimeout), int64(d.IdleConnTimeout)},
			{"TLSHandshakeTimeout", int64(t.TLSHandshakeTimeout), int64(d.TLSHandshakeTimeout)},
			{"KeepAlive", int64(t.KeepAlive), int64(d.KeepAlive)},
		} {
			if f.got != 0 && f.got != f.deflt {
				return &InvalidArgumentError{Field: "Transport." + f.name, Message: "cannot be honoured: " +
					"the native core keeps its own connection pool (only DialTimeout and the " +
					"DefaultTransportConfig values are accepted)"}
			}
		}
		if t.AllowWeakServerCertKeyLengths {
			return &InvalidArgumentError{Field: "Transport.AllowWeakServerCertKeyLengths", Message: "cannot be honoured: " +
				"the native core verifies server certificates itself"}
		}
	}
	return nil
}

// validateForSandbox is validate plus the options a Sandbox handle cannot honour.
func (c *ConnectionConfig) validateForSandbox() error {
	if err := c.validate(); err != nil {
		return err
	}
	if len(c.EndpointHostRewrite) > 0 {
		return &InvalidArgumentError{Field: "EndpointHostRewrite", Message: "cannot be honoured for a Sandbox: " +
			"the native core reaches execd and egress at the address the server returns; " +
			"use UseServerProxy, or SandboxManager.GetEndpoint (which rewrites) with NewExecdClient"}
	}
	return nil
}

// sessionConnection is c as the op layer's `connection` overrides
// (bindings/common/README.md §2; keys as `config.new`).
func (c *ConnectionConfig) sessionConnection() map[string]any {
	o := map[string]any{
		"domain":            c.GetDomain(),
		"protocol":          c.GetProtocol(),
		"request_timeout_s": c.requestTimeout().Seconds(),
		"use_server_proxy":  c.UseServerProxy,
		"user_agent":        "OpenSandbox-Go-SDK/" + Version,
	}
	headers := map[string]string{}
	for k, v := range c.Headers {
		headers[k] = v
	}
	key := c.GetAPIKey()
	if c.AuthHeader != "" && !strings.EqualFold(c.AuthHeader, "OPEN-SANDBOX-API-KEY") {
		// A custom auth header: send the key under that name instead.
		if key != "" {
			headers[c.AuthHeader] = key
		}
		o["api_key"] = nil
	} else if key != "" {
		o["api_key"] = key
	} else {
		o["api_key"] = nil
	}
	if len(headers) > 0 {
		o["headers"] = headers
	}
	if c.EndpointCacheDisabled {
		o["endpoint_cache_ttl_s"] = 0.0
		o["endpoint_cache_size"] = 0
	} else {
		ttl, size := c.EndpointCacheTTL, c.EndpointCacheSize
		if ttl <= 0 {
			ttl = DefaultEndpointCacheTTL
		}
		if size <= 0 {
			size = DefaultEndpointCacheSize
		}
		o["endpoint_cache_ttl_s"] = ttl.Seconds()
		o["endpoint_cache_size"] = size
	}
	if c.Transport != nil && c.Transport.DialTimeout > 0 {
		o["connect_timeout_s"] = c.Transport.DialTimeout.Seconds()
	}
	if c.Retry == nil {
		// The official SDK retries nothing unless asked: null = no retries.
		o["retry"] = nil
	} else {
		r := c.Retry
		retry := map[string]any{"max_retries": r.MaxRetries, "jitter": r.Jitter > 0}
		if r.InitialBackoff > 0 {
			retry["initial_backoff_ms"] = r.InitialBackoff.Milliseconds()
		}
		if r.MaxBackoff > 0 {
			retry["max_backoff_ms"] = r.MaxBackoff.Milliseconds()
		}
		if r.Multiplier >= 1 {
			retry["multiplier"] = r.Multiplier
		}
		if len(r.RetryableStatusCodes) > 0 {
			retry["retryable_status_codes"] = r.RetryableStatusCodes
		}
		o["retry"] = retry
	}
	return o
}
