// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** DiagnosticContent (same shape and getters as the official SDK). */
public final class DiagnosticContent {
    private final String sandboxId;
    private final String kind;
    private final String scope;
    private final String delivery;
    private final String contentType;
    private final Boolean truncated;
    private final String content;
    private final String contentUrl;
    private final Long contentLength;
    private final OffsetDateTime expiresAt;
    private final List<String> warnings;

    public DiagnosticContent(String sandboxId, String kind, String scope, String delivery, String contentType, Boolean truncated, String content, String contentUrl, Long contentLength, OffsetDateTime expiresAt, List<String> warnings) {
        this.sandboxId = sandboxId;
        this.kind = kind;
        this.scope = scope;
        this.delivery = delivery;
        this.contentType = contentType;
        this.truncated = truncated;
        this.content = content;
        this.contentUrl = contentUrl;
        this.contentLength = contentLength;
        this.expiresAt = expiresAt;
        this.warnings = warnings;
    }

    public String getSandboxId() {
        return sandboxId;
    }

    public String getKind() {
        return kind;
    }

    public String getScope() {
        return scope;
    }

    public String getDelivery() {
        return delivery;
    }

    public String getContentType() {
        return contentType;
    }

    public Boolean getTruncated() {
        return truncated;
    }

    public String getContent() {
        return content;
    }

    public String getContentUrl() {
        return contentUrl;
    }

    public Long getContentLength() {
        return contentLength;
    }

    public OffsetDateTime getExpiresAt() {
        return expiresAt;
    }

    public List<String> getWarnings() {
        return warnings;
    }

    /** Internal: from the native JSON form. */
    public static DiagnosticContent fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new DiagnosticContent(
            Json.str(m.get("sandbox_id")),
            Json.str(m.get("kind")),
            Json.str(m.get("scope")),
            Json.str(m.get("delivery")),
            Json.str(m.get("content_type")),
            Json.boolean_(m.get("truncated")),
            Json.str(m.get("content")),
            Json.str(m.get("content_url")),
            Json.long_(m.get("content_length")),
            Json.time(m.get("expires_at")),
            Json.strList(m.get("warnings")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sandbox_id", sandboxId);
        m.put("kind", kind);
        m.put("scope", scope);
        m.put("delivery", delivery);
        m.put("content_type", contentType);
        m.put("truncated", truncated);
        m.put("content", content);
        m.put("content_url", contentUrl);
        m.put("content_length", contentLength);
        m.put("expires_at", expiresAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(expiresAt));
        m.put("warnings", warnings);
        return m;
    }

    @Override
    public String toString() {
        return "DiagnosticContent" + toJson();
    }
}
