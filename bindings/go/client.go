package opensandbox

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// Client is the base of the low-level clients (LifecycleClient, ExecdClient,
// EgressClient): a base URL, a key sent in one auth header, and options. It holds no
// HTTP client of its own: every call is an op of the shared core (bindings/common),
// which owns the HTTP stack, so the options are translated into the core's
// connection settings (see each Option for what is honoured).
type Client struct {
	baseURL    string
	apiKey     string
	authHeader string
	headers    map[string]string
	timeout    *time.Duration
	retry      *RetryConfig
	// optErr is the first option that cannot be honoured; every call returns it.
	optErr error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient accepts an *http.Client for source compatibility. The core owns the
// HTTP stack, so only what it can honour is taken: the client's Timeout (as
// WithTimeout). A client that would change behaviour the core cannot reproduce (a
// custom RoundTripper, a cookie jar, a redirect policy, or an *http.Transport with
// its own TLS roots, client certificates, InsecureSkipVerify or proxy function) makes
// every call of the client fail with an *InvalidArgumentError instead of being
// silently ignored. DefaultTransport() and a nil Transport are accepted.
func WithHTTPClient(c *http.Client) Option {
	return func(cl *Client) {
		if c == nil {
			return
		}
		if err := checkHTTPClient(c); err != nil && cl.optErr == nil {
			cl.optErr = err
		}
		if c.Timeout > 0 && cl.timeout == nil {
			t := c.Timeout
			cl.timeout = &t
		}
	}
}

func checkHTTPClient(c *http.Client) error {
	bad := func(what string) error {
		return &InvalidArgumentError{Field: "WithHTTPClient", Message: what +
			" cannot be honoured: this package's requests go through the native core's HTTP stack"}
	}
	if c.Jar != nil {
		return bad("a cookie jar")
	}
	if c.CheckRedirect != nil {
		return bad("a redirect policy")
	}
	switch t := c.Transport.(type) {
	case nil:
		return nil
	case *http.Transport:
		if t.TLSClientConfig != nil && !plainTLS(t.TLSClientConfig) {
			return bad("a TLS configuration (roots, certificates, InsecureSkipVerify)")
		}
		if t.Proxy != nil && reflect.ValueOf(t.Proxy).Pointer() != reflect.ValueOf(http.ProxyFromEnvironment).Pointer() {
			return bad("a proxy function")
		}
		if t.DialTLSContext != nil || t.DialTLS != nil {
			return bad("a custom TLS dialer")
		}
		return nil
	default:
		return bad(fmt.Sprintf("a custom RoundTripper (%T)", t))
	}
}

// plainTLS reports whether cfg only sets what DefaultTransport sets (a minimum
// version, a certificate strength check): the core verifies certificates itself.
func plainTLS(cfg *tls.Config) bool {
	return cfg.RootCAs == nil && len(cfg.Certificates) == 0 && !cfg.InsecureSkipVerify &&
		cfg.GetClientCertificate == nil && cfg.VerifyPeerCertificate == nil && cfg.ServerName == ""
}

// WithTimeout bounds each ordinary request (the core's request timeout). Streams
// (command output, metrics, downloads) are bounded by their context instead, as the
// official SDK recommends.
func WithTimeout(d time.Duration) Option {
	return func(cl *Client) { cl.timeout = &d }
}

// WithHeaders adds headers to every request; they cannot override the auth header.
func WithHeaders(headers map[string]string) Option {
	return func(cl *Client) {
		if cl.headers == nil {
			cl.headers = make(map[string]string, len(headers))
		}
		for k, v := range headers {
			cl.headers[k] = v
		}
	}
}

// WithAuthHeader overrides the name of the header that carries the key.
func WithAuthHeader(header string) Option {
	return func(cl *Client) { cl.authHeader = header }
}

// WithRetry retries transient failures (429/502/503/504 by default, and connection
// errors) with exponential backoff, through the core's retry policy.
func WithRetry(cfg RetryConfig) Option {
	return func(cl *Client) { cl.retry = &cfg }
}

// NewClient creates a base Client; authHeader names the header that carries apiKey
// ("OPEN-SANDBOX-API-KEY" for lifecycle, "X-EXECD-ACCESS-TOKEN" for execd,
// "OPENSANDBOX-EGRESS-AUTH" for egress).
func NewClient(baseURL, apiKey, authHeader string, opts ...Option) *Client {
	c := &Client{baseURL: strings.TrimRight(baseURL, "/"), apiKey: apiKey, authHeader: authHeader}
	for _, opt := range opts {
		opt(c)
	}
	c.headers = applyClientIP(c.headers, detectedClientIP())
	return c
}

// connectionConfig is the client as a ConnectionConfig, for the lifecycle API.
func (c *Client) connectionConfig() ConnectionConfig {
	cfg := ConnectionConfig{
		Domain:     c.baseURL,
		APIKey:     c.apiKey,
		AuthHeader: c.authHeader,
		Headers:    c.headers,
		Retry:      c.retry,
		// The client's endpoint cache is the Go-side one (NewLifecycleClientWithCache).
		EndpointCacheDisabled: true,
	}
	if c.timeout != nil {
		cfg.RequestTimeout = *c.timeout
	}
	return cfg
}

// endpointHeaders are the headers of a direct (execd/egress) endpoint: the caller's
// headers plus the key under the auth header.
func (c *Client) endpointHeaders() map[string]string {
	h := make(map[string]string, len(c.headers)+1)
	for k, v := range c.headers {
		h[k] = v
	}
	if c.apiKey != "" {
		h[c.authHeader] = c.apiKey
	}
	return h
}
