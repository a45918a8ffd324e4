// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** PagedSnapshotInfos (same shape and getters as the official SDK). */
public final class PagedSnapshotInfos {
    private final List<SnapshotInfo> snapshotInfos;
    private final PaginationInfo pagination;

    public PagedSnapshotInfos(List<SnapshotInfo> snapshotInfos, PaginationInfo pagination) {
        this.snapshotInfos = snapshotInfos;
        this.pagination = pagination;
    }

    public List<SnapshotInfo> getSnapshotInfos() {
        return snapshotInfos;
    }

    public PaginationInfo getPagination() {
        return pagination;
    }

    /** Internal: from the native JSON form. */
    public static PagedSnapshotInfos fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new PagedSnapshotInfos(
            Json.list(m.get("snapshot_infos"), SnapshotInfo::fromJson),
            PaginationInfo.fromJson(m.get("pagination")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("snapshot_infos", snapshotInfos == null ? null : Json.mapList(snapshotInfos, SnapshotInfo::toJson));
        m.put("pagination", pagination == null ? null : pagination.toJson());
        return m;
    }

    @Override
    public String toString() {
        return "PagedSnapshotInfos" + toJson();
    }
}
