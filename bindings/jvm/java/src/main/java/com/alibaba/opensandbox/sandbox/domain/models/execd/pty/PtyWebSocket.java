// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.pty;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * (1.1) Where to attach to a PTY session with your own WebSocket client: the {@code ws://}
 * or {@code wss://} URL (with {@code pty=0}, {@code since}, {@code takeover=1} as asked) and
 * the headers to send on the handshake (the connection's extra headers, the endpoint's
 * routing/auth headers, the {@code User-Agent}). The frames are described in the execd PTY
 * protocol (binary {@code 0x00}+bytes for input, {@code 0x01}/{@code 0x02}+8-byte offset for
 * output, JSON {@code resize}/{@code signal}/{@code ping} text frames).
 */
public final class PtyWebSocket {
    private final String url;
    private final Map<String, String> headers;

    public PtyWebSocket(String url, Map<String, String> headers) {
        this.url = url;
        this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    }

    public String getUrl() {
        return url;
    }

    public Map<String, String> getHeaders() {
        return headers;
    }

    @Override
    public String toString() {
        return "PtyWebSocket{url=" + url + ", headers=" + headers.keySet() + "}";
    }
}
