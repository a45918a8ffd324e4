// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** SandboxMetrics (same shape and getters as the official SDK). */
public final class SandboxMetrics {
    private final Double cpuCount;
    private final Double cpuUsedPercentage;
    private final Double memoryTotalInMiB;
    private final Double memoryUsedInMiB;
    private final Long timestamp;

    public SandboxMetrics(Double cpuCount, Double cpuUsedPercentage, Double memoryTotalInMiB, Double memoryUsedInMiB, Long timestamp) {
        this.cpuCount = cpuCount;
        this.cpuUsedPercentage = cpuUsedPercentage;
        this.memoryTotalInMiB = memoryTotalInMiB;
        this.memoryUsedInMiB = memoryUsedInMiB;
        this.timestamp = timestamp;
    }

    public Double getCpuCount() {
        return cpuCount;
    }

    public Double getCpuUsedPercentage() {
        return cpuUsedPercentage;
    }

    public Double getMemoryTotalInMiB() {
        return memoryTotalInMiB;
    }

    public Double getMemoryUsedInMiB() {
        return memoryUsedInMiB;
    }

    public Long getTimestamp() {
        return timestamp;
    }

    /** Internal: from the native JSON form. */
    public static SandboxMetrics fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxMetrics(
            Json.double_(m.get("cpu_count")),
            Json.double_(m.get("cpu_used_percentage")),
            Json.double_(m.get("memory_total_in_mib")),
            Json.double_(m.get("memory_used_in_mib")),
            Json.long_(m.get("timestamp")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cpu_count", cpuCount);
        m.put("cpu_used_percentage", cpuUsedPercentage);
        m.put("memory_total_in_mib", memoryTotalInMiB);
        m.put("memory_used_in_mib", memoryUsedInMiB);
        m.put("timestamp", timestamp);
        return m;
    }

    @Override
    public String toString() {
        return "SandboxMetrics" + toJson();
    }
}
