// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import java.time.Instant;

/** One idle sandbox of a pool and when its idle membership expires. */
public final class IdleEntry {
    private final String sandboxId;
    private final Instant expiresAt;

    public IdleEntry(String sandboxId, Instant expiresAt) {
        this.sandboxId = sandboxId;
        this.expiresAt = expiresAt;
    }

    public String getSandboxId() {
        return sandboxId;
    }

    public Instant getExpiresAt() {
        return expiresAt;
    }

    @Override
    public String toString() {
        return "IdleEntry(" + sandboxId + ", " + expiresAt + ")";
    }
}
