// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

/** Build phases of a template (new values may appear: treat unknown ones gracefully). */
public final class TemplatePhase {
    public static final String PENDING = "Pending";
    public static final String BUILDING = "Building";
    public static final String SUCCEEDED = "Succeeded";
    public static final String FAILED = "Failed";

    private TemplatePhase() {
    }
}
