// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** SandboxFilter (same shape and getters as the official SDK). */
public final class SandboxFilter {
    private final List<String> states;
    private final Map<String,String> metadata;
    private final Integer page;
    private final Integer pageSize;

    public SandboxFilter(List<String> states, Map<String,String> metadata, Integer page, Integer pageSize) {
        this.states = states;
        this.metadata = metadata;
        this.page = page;
        this.pageSize = pageSize;
    }

    public List<String> getStates() {
        return states;
    }

    public Map<String,String> getMetadata() {
        return metadata;
    }

    public Integer getPage() {
        return page;
    }

    public Integer getPageSize() {
        return pageSize;
    }

    /** Internal: from the native JSON form. */
    public static SandboxFilter fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxFilter(
            Json.strList(m.get("states")),
            Json.strMap(m.get("metadata")),
            Json.integer(m.get("page")),
            Json.integer(m.get("page_size")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("states", states);
        m.put("metadata", metadata);
        m.put("page", page);
        m.put("page_size", pageSize);
        return m;
    }

    @Override
    public String toString() {
        return "SandboxFilter" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of SandboxFilter. */
    public static final class Builder {
        private List<String> states;
        private Map<String,String> metadata;
        private Integer page;
        private Integer pageSize;

        public Builder states(List<String> states) {
            this.states = states;
            return this;
        }

        public Builder states(String... states) {
            this.states = java.util.Arrays.asList(states);
            return this;
        }

        public Builder metadata(Map<String,String> metadata) {
            this.metadata = metadata;
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

        public SandboxFilter build() {
            return new SandboxFilter(states, metadata, page, pageSize);
        }
    }
}
