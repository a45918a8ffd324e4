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
	// HTTPClient is not supported (the native core owns the HTTP stack); setting it
	// has no effect.
	HTTPClient *http.Client
	// AuthHeader overrides the lifecycle auth header name (default
	// "OPEN-SANDBOX-API-KEY").
	AuthHeader string
	// Retry enables retries of transient failures; nil means no retries.
	Retry *RetryConfig
	// Transport is not supported (the native core owns the connection pool);
	// setting it has no effect.
	Transport *TransportConfig
	// EndpointHostRewrite is not supported yet; setting it has no effect.
	EndpointHostRewrite map[string]string
	// EndpointCacheTTL, EndpointCacheSize and EndpointCacheDisabled configure the
	// official SDK's endpoint cache. A Sandbox of this package resolves its execd
	// and egress endpoints once per handle in the core, so they have no effect
	// there; LifecycleClient.GetEndpoint caches through NewLifecycleClientWithCache.
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

// TransportConfig tunes HTTP connection pooling (accepted for compatibility; the
// native core keeps its own pool, so these settings do not reach it).
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

// RewriteEndpointURL applies EndpointHostRewrite to an endpoint URL.
func (c *ConnectionConfig) RewriteEndpointURL(endpointURL string) string {
	for from, to := range c.EndpointHostRewrite {
		endpointURL = strings.ReplaceAll(endpointURL, from, to)
	}
	return endpointURL
}

// sessionConnection is c as the op layer's `connection` overrides
// (bindings/common/README.md §2; keys as `config.new`).
func (c *ConnectionConfig) sessionConnection() map[string]any {
	o := map[string]any{
		"domain":            c.GetDomain(),
		"protocol":          c.GetProtocol(),
		"request_timeout_s": c.GetRequestTimeout().Seconds(),
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
