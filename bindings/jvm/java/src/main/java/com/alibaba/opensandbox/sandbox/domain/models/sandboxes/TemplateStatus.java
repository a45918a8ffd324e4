// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

/** Build status of a template: {@link TemplatePhase} plus the manifest (on success) or the reason (on failure). */
public final class TemplateStatus {
    private final String phase;
    private final String manifestRef;
    private final String message;

    public TemplateStatus(String phase, String manifestRef, String message) {
        this.phase = phase;
        this.manifestRef = manifestRef;
        this.message = message;
    }

    public String getPhase() {
        return phase;
    }

    public String getManifestRef() {
        return manifestRef;
    }

    public String getMessage() {
        return message;
    }
}
