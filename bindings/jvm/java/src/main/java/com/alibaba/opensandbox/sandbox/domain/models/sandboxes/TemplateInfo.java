// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;

/** A template (same getters as the official SDK, plus {@link #getEnv()}). */
public final class TemplateInfo {
    private final Map<?, ?> json;
    private final TemplateStatus status;

    private TemplateInfo(Map<?, ?> json) {
        this.json = json;
        Map<?, ?> s = json.get("status") instanceof Map ? (Map<?, ?>) json.get("status") : Map.of();
        this.status = new TemplateStatus(Json.str(s.get("phase")), Json.str(s.get("manifest_ref")), Json.str(s.get("message")));
    }

    public String getTemplateId() {
        return Json.str(json.get("template_id"));
    }

    public String getImage() {
        return Json.str(json.get("image"));
    }

    public String getPublish() {
        return Json.str(json.get("publish"));
    }

    public TemplateFormat getFormat() {
        return TemplateFormat.fromWire(Json.str(json.get("format")));
    }

    public TemplateStatus getStatus() {
        return status;
    }

    public OffsetDateTime getCreatedAt() {
        return Json.time(json.get("created_at"));
    }

    public OffsetDateTime getUpdatedAt() {
        return Json.time(json.get("updated_at"));
    }

    public Map<String, String> getResourceLimits() {
        return Json.strMap(json.get("resource_limits"));
    }

    public List<String> getEntrypoint() {
        return Json.strList(json.get("entrypoint"));
    }

    public Map<String, String> getEnv() {
        return Json.strMap(json.get("env"));
    }

    public Map<String, String> getMetadata() {
        return Json.strMap(json.get("metadata"));
    }

    public TemplateReadiness getReadiness() {
        return TemplateReadiness.fromJson(json.get("readiness"));
    }

    /** Internal: from the op layer's form. */
    public static TemplateInfo fromJson(Object json) {
        return json instanceof Map ? new TemplateInfo((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "TemplateInfo" + Json.write(json);
    }
}
