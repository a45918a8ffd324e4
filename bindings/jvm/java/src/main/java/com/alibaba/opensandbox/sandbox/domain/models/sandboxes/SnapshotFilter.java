// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** SnapshotFilter (same shape and getters as the official SDK). */
public final class SnapshotFilter {
    private final String sandboxId;
    private final List<String> states;
    private final Integer page;
    private final Integer pageSize;

    public SnapshotFilter(String sandboxId, List<String> states, Integer page, Integer pageSize) {
        this.sandboxId = sandboxId;
        this.states = states;
        this.page = page;
        this.pageSize = pageSize;
    }

    public String getSandboxId() {
        return sandboxId;
    }

    public List<String> getStates() {
        return states;
    }

    public Integer getPage() {
        return page;
    }

    public Integer getPageSize() {
        return pageSize;
    }

    /** Internal: from the native JSON form. */
    public static SnapshotFilter fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SnapshotFilter(
            Json.str(m.get("sandbox_id")),
            Json.strList(m.get("states")),
            Json.integer(m.get("page")),
            Json.integer(m.get("page_size")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sandbox_id", sandboxId);
        m.put("states", states);
        m.put("page", page);
        m.put("page_size", pageSize);
        return m;
    }

    @Override
    public String toString() {
        return "SnapshotFilter" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of SnapshotFilter. */
    public static final class Builder {
        private String sandboxId;
        private List<String> states;
        private Integer page;
        private Integer pageSize;

        public Builder sandboxId(String sandboxId) {
            this.sandboxId = sandboxId;
            return this;
        }

        public Builder states(List<String> states) {
            this.states = states;
            return this;
        }

        public Builder states(String... states) {
            this.states = java.util.Arrays.asList(states);
            return this;
        }

        public Builder page(Integer page) {
            this.page = page;
            return this;
        }

        public Builder pageSize(Integer pageSize) {
            this.pageSize = pageSize;
            return this;
        }

        public SnapshotFilter build() {
            return new SnapshotFilter(sandboxId, states, page, pageSize);
        }
    }
}
