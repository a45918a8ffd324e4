// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.config;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import com.alibaba.opensandbox.sandbox.transport.JitterMode;
import com.alibaba.opensandbox.sandbox.transport.RetryPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Connection settings: API key ({@code OPEN_SANDBOX_API_KEY}), domain
 * ({@code OPEN_SANDBOX_DOMAIN}, default {@code localhost:8080}), protocol, request
 * timeout (30 s), extra headers and {@code useServerProxy}; (1.1) the retry policy (on
 * by default), the endpoint cache (600 s, 1024 entries), {@code disableMetrics} and
 * {@code enableTracing}. Sandboxes and managers built from one instance share one native
 * connection pool and one endpoint cache.
 */
public final class ConnectionConfig {
    public static final String ENV_API_KEY = "OPEN_SANDBOX_API_KEY";
    public static final String ENV_DOMAIN = "OPEN_SANDBOX_DOMAIN";
    public static final String DEFAULT_DOMAIN = "localhost:8080";
    public static final String DEFAULT_PROTOCOL = "http";
    public static final String USER_AGENT = "OpenSandbox-Kotlin-SDK/1.0.12";
    /** Set to {@code 1} to disable SDK telemetry (as {@code disableMetrics}). */
    public static final String ENV_DISABLE_METRICS = "OPENSANDBOX_DISABLE_METRICS";
    public static final Duration DEFAULT_ENDPOINT_CACHE_TTL = Duration.ofSeconds(600);
    public static final int DEFAULT_ENDPOINT_CACHE_SIZE = 1024;

    private final String apiKey;
    private final boolean apiKeySet;
    private final String domain;
    private final String protocol;
    private final Duration requestTimeout;
    private final boolean debug;
    private final Map<String, String> headers;
    private final boolean useServerProxy;
    private final Duration endpointCacheTtl;
    private final int endpointCacheSize;
    private final boolean endpointCacheDisabled;
    private final boolean disableMetrics;
    private final boolean enableTracing;
    private final RetryPolicy retryPolicy;
    private volatile long handle;

    private ConnectionConfig(Builder b) {
        this.apiKeySet = b.apiKeySet;
        this.apiKey = b.apiKeySet ? b.apiKey : System.getenv(ENV_API_KEY);
        String d = b.domain != null ? b.domain : System.getenv(ENV_DOMAIN);
        this.domain = d == null || d.isEmpty() ? DEFAULT_DOMAIN : d;
        this.protocol = b.protocol != null ? b.protocol : DEFAULT_PROTOCOL;
        this.requestTimeout = b.requestTimeout != null ? b.requestTimeout : Duration.ofSeconds(30);
        this.debug = b.debug;
        this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
        this.useServerProxy = b.useServerProxy;
        this.endpointCacheTtl = b.endpointCacheTtl;
        this.endpointCacheSize = b.endpointCacheSize;
        this.endpointCacheDisabled = b.endpointCacheDisabled;
        this.disableMetrics = b.disableMetrics;
        this.enableTracing = b.enableTracing;
        this.retryPolicy = b.retryPolicy;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getApiKey() {
        return apiKey;
    }

    public String getDomain() {
        return domain;
    }

    public String getProtocol() {
        return protocol;
    }

    /** {@code protocol://domain/v1} (a scheme in the domain wins). */
    public String getBaseUrl() {
        String base = domain.startsWith("http://") || domain.startsWith("https://") ? domain : protocol + "://" + domain;
        while (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        return base.endsWith("/v1") ? base : base + "/v1";
    }

    public Duration getRequestTimeout() {
        return requestTimeout;
    }

    public boolean getDebug() {
        return debug;
    }

    public Map<String, String> getHeaders() {
        return headers;
    }

    public boolean getUseServerProxy() {
        return useServerProxy;
    }

    public String getUserAgent() {
        return USER_AGENT;
    }

    /** The retry policy of non-streaming requests (on by default). */
    public RetryPolicy getRetryPolicy() {
        return retryPolicy;
    }

    /** How long a resolved sandbox endpoint is reused (default 600 s). */
    public Duration getEndpointCacheTtl() {
        return endpointCacheTtl;
    }

    /** Maximum number of cached endpoints (default 1024). */
    public int getEndpointCacheSize() {
        return endpointCacheSize;
    }

    public boolean getEndpointCacheDisabled() {
        return endpointCacheDisabled;
    }

    /** The {@code disableMetrics} flag as set (see {@link #isMetricsDisabled()}). */
    public boolean getDisableMetrics() {
        return disableMetrics;
    }

    /**
     * Whether SDK telemetry ({@code sandbox.create} latency reports) is off: the flag, or
     * {@code OPENSANDBOX_DISABLE_METRICS=1}. This package sends no such reports either way.
     */
    public boolean isMetricsDisabled() {
        if (disableMetrics) {
            return true;
        }
        String env = System.getenv(ENV_DISABLE_METRICS);
        return env != null && env.trim().equals("1");
    }

    /**
     * The {@code enableTracing} flag. Accepted for compatibility: this package has no
     * OpenTelemetry integration and sends no {@code traceparent} header.
     */
    public boolean getEnableTracing() {
        return enableTracing;
    }

    /** Internal: the native configuration (created once per instance). */
    public long nativeHandle() {
        long h = handle;
        if (h != 0) {
            return h;
        }
        synchronized (this) {
            if (handle == 0) {
                Map<String, Object> args = Json.obj(
                        "domain", domain,
                        "protocol", protocol,
                        "request_timeout_s", requestTimeout.toMillis() / 1000.0,
                        "headers", headers,
                        "use_server_proxy", useServerProxy,
                        "user_agent", USER_AGENT,
                        "retry", nativeRetry(retryPolicy),
                        "endpoint_cache_ttl_s", endpointCacheDisabled ? 0.0 : endpointCacheTtl.toMillis() / 1000.0,
                        "endpoint_cache_size", endpointCacheDisabled ? 0 : Math.max(1, endpointCacheSize));
                if (apiKeySet) {
                    args.put("api_key", apiKey);
                }
                Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("config.new", args);
                long created = Json.long_(r.get("handle"));
                // Released when this configuration becomes unreachable: no native
                // config (and its connection pool) outlives its Java object.
                NativeBridge.releaseOnGc(this, created);
                handle = created;
            }
            return handle;
        }
    }

    /** The op layer's {@code retry} argument of a policy (null = no retries). */
    static Map<String, Object> nativeRetry(RetryPolicy p) {
        if (p.getMaxRetries() == 0) {
            return null;
        }
        List<Integer> statuses = new ArrayList<>(p.getRetryableStatusCodesIdempotent());
        return Json.obj(
                "max_retries", p.getMaxRetries(),
                "initial_backoff_ms", p.getInitialBackoff().toMillis(),
                "max_backoff_ms", p.getMaxBackoff().toMillis(),
                "multiplier", p.getBackoffMultiplier(),
                "jitter", p.getJitter() != JitterMode.NONE,
                "retryable_status_codes", statuses);
    }

    /** Why the native core cannot honour {@code p}, or null when it can. */
    static String unsupportedRetry(RetryPolicy p) {
        List<String> knobs = new ArrayList<>();
        if (!p.getRetryableStatusCodesNonIdempotent().isEmpty()) {
            knobs.add("retryableStatusCodesNonIdempotent");
        }
        if (p.getPerAttemptTimeout() != null) {
            knobs.add("perAttemptTimeout");
        }
        if (p.getOverallDeadline() != null) {
            knobs.add("overallDeadline");
        }
        if (p.getOnRetry() != null) {
            knobs.add("onRetry");
        }
        if (knobs.isEmpty()) {
            return null;
        }
        return "RetryPolicy " + String.join(", ", knobs) + " is not supported: retries run in the native core, "
                + "which retries POST/PATCH only when the connection could not be established, bounds each "
                + "attempt by requestTimeout, and reports no retry events (use maxRetries, initialBackoff, "
                + "maxBackoff, backoffMultiplier, jitter and retryableStatusCodesIdempotent)";
    }

    /** Builder of {@link ConnectionConfig}. */
    public static final class Builder {
        private String apiKey;
        private boolean apiKeySet;
        private String domain;
        private String protocol;
        private Duration requestTimeout;
        private boolean debug;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private boolean useServerProxy;
        private Duration endpointCacheTtl = DEFAULT_ENDPOINT_CACHE_TTL;
        private int endpointCacheSize = DEFAULT_ENDPOINT_CACHE_SIZE;
        private boolean endpointCacheDisabled;
        private boolean disableMetrics;
        private boolean enableTracing;
        private RetryPolicy retryPolicy = new RetryPolicy();

        /** The API key; {@code null} sends no key (the environment is not read). */
        public Builder apiKey(String apiKey) {
            this.apiKey = apiKey;
            this.apiKeySet = true;
            return this;
        }

        public Builder domain(String domain) {
            this.domain = domain;
            return this;
        }

        public Builder protocol(String protocol) {
            this.protocol = protocol;
            return this;
        }

        public Builder requestTimeout(Duration requestTimeout) {
            this.requestTimeout = requestTimeout;
            return this;
        }

        public Builder debug(boolean debug) {
            this.debug = debug;
            return this;
        }

        public Builder headers(Map<String, String> headers) {
            this.headers.putAll(headers);
            return this;
        }

        public Builder headers(Consumer<Map<String, String>> configure) {
            configure.accept(this.headers);
            return this;
        }

        public Builder addHeader(String name, String value) {
            this.headers.put(name, value);
            return this;
        }

        public Builder useServerProxy(boolean useServerProxy) {
            this.useServerProxy = useServerProxy;
            return this;
        }

        /**
         * The retry policy of non-streaming requests (default {@code new RetryPolicy()}, on;
         * {@link RetryPolicy#disabled()} turns retries off). A policy using knobs the native
         * core has no equivalent for is refused with {@link InvalidArgumentException}.
         */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            if (retryPolicy == null) {
                throw new InvalidArgumentException("retryPolicy must not be null (use RetryPolicy.disabled())");
            }
            String why = unsupportedRetry(retryPolicy);
            if (why != null) {
                throw new InvalidArgumentException(why);
            }
            this.retryPolicy = retryPolicy;
            return this;
        }

        /** How long a resolved endpoint is reused (default 600 s). */
        public Builder endpointCacheTtl(Duration ttl) {
            if (ttl == null || ttl.isNegative()) {
                throw new InvalidArgumentException("endpointCacheTtl must be >= 0, got " + ttl);
            }
            this.endpointCacheTtl = ttl;
            return this;
        }

        /** Maximum number of cached endpoints (default 1024; the cache holds at least 1, as the official). */
        public Builder endpointCacheSize(int size) {
            this.endpointCacheSize = size;
            return this;
        }

        /** Turns the endpoint cache off: every sandbox handle resolves its endpoints. */
        public Builder endpointCacheDisabled(boolean disabled) {
            this.endpointCacheDisabled = disabled;
            return this;
        }

        /** Disables SDK telemetry (this package sends none; see {@link ConnectionConfig#isMetricsDisabled()}). */
        public Builder disableMetrics() {
            return disableMetrics(true);
        }

        public Builder disableMetrics(boolean disabled) {
            this.disableMetrics = disabled;
            return this;
        }

        /** Accepted for compatibility (no OpenTelemetry here; see {@link ConnectionConfig#getEnableTracing()}). */
        public Builder enableTracing() {
            return enableTracing(true);
        }

        public Builder enableTracing(boolean enable) {
            this.enableTracing = enable;
            return this;
        }

        public ConnectionConfig build() {
            return new ConnectionConfig(this);
        }
    }
}
