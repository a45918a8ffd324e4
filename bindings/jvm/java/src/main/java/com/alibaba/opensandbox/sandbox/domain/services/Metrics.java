// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxMetrics;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.util.List;

/** Resource metrics of one sandbox ({@code sandbox.metrics()}). */
public final class Metrics {
    private final long handle;

    /** Internal: use {@code sandbox.metrics()}. */
    public Metrics(long handle) {
        this.handle = handle;
    }

    public SandboxMetrics getMetrics() {
        return SandboxMetrics.fromJson(NativeBridge.invoke("sandbox.get_metrics", Json.obj("sandbox", handle)));
    }

    /** The first {@code count} samples of the metrics watch stream (then the stream is closed). */
    public List<SandboxMetrics> watch(int count) {
        return Json.list(NativeBridge.invoke("metrics.watch", Json.obj("sandbox", handle, "count", count)),
                SandboxMetrics::fromJson);
    }
}
