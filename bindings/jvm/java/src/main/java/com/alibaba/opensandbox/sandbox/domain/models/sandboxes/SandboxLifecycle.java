// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Lifecycle hooks of a new sandbox ({@code Sandbox.builder().lifecycle(...)}). */
public final class SandboxLifecycle {
    private final LifecycleHook preStart;
    private final List<PeriodicLifecycleHook> periodic;

    private SandboxLifecycle(LifecycleHook preStart, List<PeriodicLifecycleHook> periodic) {
        this.preStart = preStart;
        this.periodic = periodic;
    }

    public static Builder builder() {
        return new Builder();
    }

    public LifecycleHook getPreStart() {
        return preStart;
    }

    public List<PeriodicLifecycleHook> getPeriodic() {
        return periodic;
    }

    /** Whether no hook is set (then nothing is sent). */
    public boolean isEmpty() {
        return preStart == null && (periodic == null || periodic.isEmpty());
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj();
        if (preStart != null) {
            m.put("pre_start", preStart.toJson());
        }
        if (periodic != null) {
            m.put("periodic", Json.mapList(periodic, PeriodicLifecycleHook::toJson));
        }
        return m;
    }

    public static final class Builder {
        private LifecycleHook preStart;
        private List<PeriodicLifecycleHook> periodic;

        public Builder preStart(LifecycleHook preStart) {
            this.preStart = preStart;
            return this;
        }

        public Builder periodic(List<PeriodicLifecycleHook> periodic) {
            Set<String> names = new HashSet<>();
            for (PeriodicLifecycleHook h : periodic) {
                if (!names.add(h.getName())) {
                    throw new InvalidArgumentException("Periodic lifecycle hook names must be unique");
                }
            }
            this.periodic = new ArrayList<>(periodic);
            return this;
        }

        public Builder periodic(PeriodicLifecycleHook... periodic) {
            return periodic(Arrays.asList(periodic));
        }

        public SandboxLifecycle build() {
            return new SandboxLifecycle(preStart, periodic == null || periodic.isEmpty() ? null : periodic);
        }
    }
}
