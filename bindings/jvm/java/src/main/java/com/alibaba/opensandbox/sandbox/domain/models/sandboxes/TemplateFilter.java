// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/** Filter of {@code SandboxManager.listTemplates} (metadata AND-ed; pages 1-indexed). */
public final class TemplateFilter {
    private final Map<String, String> metadata;
    private final Integer pageSize;
    private final Integer page;

    private TemplateFilter(Map<String, String> metadata, Integer pageSize, Integer page) {
        this.metadata = metadata;
        this.pageSize = pageSize;
        this.page = page;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Map<String, String> getMetadata() {
        return metadata;
    }

    public Integer getPageSize() {
        return pageSize;
    }

    public Integer getPage() {
        return page;
    }

    /** Internal: the op layer's arguments. */
    public Map<String, Object> toJson() {
        return Json.obj("metadata", metadata, "page", page, "page_size", pageSize);
    }

    public static final class Builder {
        private Map<String, String> metadata;
        private Integer pageSize;
        private Integer page;

        public Builder metadata(Map<String, String> metadata) {
            this.metadata = new LinkedHashMap<>(metadata);
            return this;
        }

        public Builder metadata(Consumer<Map<String, String>> configure) {
            Map<String, String> m = new LinkedHashMap<>();
            configure.accept(m);
            this.metadata = m;
            return this;
        }

        public Builder pageSize(int pageSize) {
            if (pageSize <= 0) {
                throw new InvalidArgumentException("Page size must be positive");
            }
            this.pageSize = pageSize;
            return this;
        }

        public Builder page(int page) {
            if (page < 1) {
                throw new InvalidArgumentException("Page must be at least 1 (1-indexed)");
            }
            this.page = page;
            return this;
        }

        public TemplateFilter build() {
            return new TemplateFilter(metadata, pageSize, page);
        }
    }
}
