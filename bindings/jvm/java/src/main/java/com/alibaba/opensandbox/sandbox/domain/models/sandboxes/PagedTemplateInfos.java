// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.List;
import java.util.Map;

/** One page of {@code SandboxManager.listTemplates}. */
public final class PagedTemplateInfos {
    private final List<TemplateInfo> templateInfos;
    private final PaginationInfo pagination;

    public PagedTemplateInfos(List<TemplateInfo> templateInfos, PaginationInfo pagination) {
        this.templateInfos = templateInfos;
        this.pagination = pagination;
    }

    public List<TemplateInfo> getTemplateInfos() {
        return templateInfos;
    }

    public PaginationInfo getPagination() {
        return pagination;
    }

    /** Internal: from the op layer's form. */
    public static PagedTemplateInfos fromJson(Object json) {
        Map<?, ?> m = (Map<?, ?>) json;
        return new PagedTemplateInfos(Json.list(m.get("template_infos"), TemplateInfo::fromJson),
                PaginationInfo.fromJson(m.get("pagination")));
    }

    /** The op layer's (snake_case) form. */
    public Map<String, Object> toJson() {
        return Json.obj("template_infos", Json.mapList(templateInfos, TemplateInfo::toJson),
                "pagination", pagination == null ? null : pagination.toJson());
    }
}
