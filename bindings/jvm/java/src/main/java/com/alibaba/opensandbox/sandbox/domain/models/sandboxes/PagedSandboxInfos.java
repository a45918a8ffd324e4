// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** PagedSandboxInfos (same shape and getters as the official SDK). */
public final class PagedSandboxInfos {
    private final List<SandboxInfo> sandboxInfos;
    private final PaginationInfo pagination;

    public PagedSandboxInfos(List<SandboxInfo> sandboxInfos, PaginationInfo pagination) {
        this.sandboxInfos = sandboxInfos;
        this.pagination = pagination;
    }

    public List<SandboxInfo> getSandboxInfos() {
        return sandboxInfos;
    }

    public PaginationInfo getPagination() {
        return pagination;
    }

    /** Internal: from the native JSON form. */
    public static PagedSandboxInfos fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new PagedSandboxInfos(
            Json.list(m.get("sandbox_infos"), SandboxInfo::fromJson),
            PaginationInfo.fromJson(m.get("pagination")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sandbox_infos", sandboxInfos == null ? null : Json.mapList(sandboxInfos, SandboxInfo::toJson));
        m.put("pagination", pagination == null ? null : pagination.toJson());
        return m;
    }

    @Override
    public String toString() {
        return "PagedSandboxInfos" + toJson();
    }
}
