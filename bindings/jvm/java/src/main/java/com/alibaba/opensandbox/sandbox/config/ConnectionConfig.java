// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.config;

import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Connection settings: API key ({@code OPEN_SANDBOX_API_KEY}), domain
 * ({@code OPEN_SANDBOX_DOMAIN}, default {@code localhost:8080}), protocol, request
 * timeout (30 s), extra headers and {@code useServerProxy}. Sandboxes and managers built
 * from one instance share one native connection pool.
 */
public final class ConnectionConfig {
    public static final String ENV_API_KEY = "OPEN_SANDBOX_API_KEY";
    public static final String ENV_DOMAIN = "OPEN_SANDBOX_DOMAIN";
    public static final String DEFAULT_DOMAIN = "localhost:8080";
    public static final String DEFAULT_PROTOCOL = "http";
    public static final String USER_AGENT = "OpenSandbox-Kotlin-SDK/1.0.12";

    private final String apiKey;
    private final boolean apiKeySet;
    private final String domain;
    private final String protocol;
    private final Duration requestTimeout;
    private final boolean debug;
    private final Map<String, String> headers;
    private final boolean useServerProxy;
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
                        "user_agent", USER_AGENT);
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

        public ConnectionConfig build() {
            return new ConnectionConfig(this);
        }
    }
}
