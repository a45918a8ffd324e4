// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** PaginationInfo (same shape and getters as the official SDK). */
public final class PaginationInfo {
    private final Integer page;
    private final Integer pageSize;
    private final Integer totalItems;
    private final Integer totalPages;
    private final Boolean hasNextPage;

    public PaginationInfo(Integer page, Integer pageSize, Integer totalItems, Integer totalPages, Boolean hasNextPage) {
        this.page = page;
        this.pageSize = pageSize;
        this.totalItems = totalItems;
        this.totalPages = totalPages;
        this.hasNextPage = hasNextPage;
    }

    public Integer getPage() {
        return page;
    }

    public Integer getPageSize() {
        return pageSize;
    }

    public Integer getTotalItems() {
        return totalItems;
    }

    public Integer getTotalPages() {
        return totalPages;
    }

    public Boolean getHasNextPage() {
        return hasNextPage;
    }

    /** Internal: from the native JSON form. */
    public static PaginationInfo fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new PaginationInfo(
            Json.integer(m.get("page")),
            Json.integer(m.get("page_size")),
            Json.integer(m.get("total_items")),
            Json.integer(m.get("total_pages")),
            Json.boolean_(m.get("has_next_page")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("page", page);
        m.put("page_size", pageSize);
        m.put("total_items", totalItems);
        m.put("total_pages", totalPages);
        m.put("has_next_page", hasNextPage);
        return m;
    }

    @Override
    public String toString() {
        return "PaginationInfo" + toJson();
    }
}
