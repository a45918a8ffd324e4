// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import java.util.Collections;
import java.util.List;

/**
 * The idle sandbox a take handed out (or null) and the alive entries it skipped because their remaining
 * TTL was too short: the caller should kill those.
 */
public final class TakeIdleResult {
    private final String sandboxId;
    private final List<String> discardedAliveSandboxIds;

    public TakeIdleResult(String sandboxId, List<String> discardedAliveSandboxIds) {
        this.sandboxId = sandboxId;
        this.discardedAliveSandboxIds = discardedAliveSandboxIds == null ? Collections.emptyList()
                : Collections.unmodifiableList(discardedAliveSandboxIds);
    }

    public static TakeIdleResult of(String sandboxId) {
        return new TakeIdleResult(sandboxId, null);
    }

    public String getSandboxId() {
        return sandboxId;
    }

    public List<String> getDiscardedAliveSandboxIds() {
        return discardedAliveSandboxIds;
    }
}
