// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** ContentReplaceEntry (same shape and getters as the official SDK). */
public final class ContentReplaceEntry {
    private final String path;
    private final String oldContent;
    private final String newContent;

    public ContentReplaceEntry(String path, String oldContent, String newContent) {
        this.path = path;
        this.oldContent = oldContent;
        this.newContent = newContent;
    }

    public String getPath() {
        return path;
    }

    public String getOldContent() {
        return oldContent;
    }

    public String getNewContent() {
        return newContent;
    }

    /** Internal: from the native JSON form. */
    public static ContentReplaceEntry fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new ContentReplaceEntry(
            Json.str(m.get("path")),
            Json.str(m.get("old_content")),
            Json.str(m.get("new_content")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("old_content", oldContent);
        m.put("new_content", newContent);
        return m;
    }

    @Override
    public String toString() {
        return "ContentReplaceEntry" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of ContentReplaceEntry. */
    public static final class Builder {
        private String path;
        private String oldContent;
        private String newContent;

        public Builder path(String path) {
            this.path = path;
            return this;
        }

        public Builder oldContent(String oldContent) {
            this.oldContent = oldContent;
            return this;
        }

        public Builder newContent(String newContent) {
            this.newContent = newContent;
            return this;
        }

        public ContentReplaceEntry build() {
            return new ContentReplaceEntry(path, oldContent, newContent);
        }
    }
}
