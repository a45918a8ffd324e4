// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

/**
 * A file to write: {@code data} is a String (UTF-8), a byte[], an InputStream (streamed,
 * never buffered whole), a java.io.File or a java.nio.file.Path. {@code mode} is octal
 * digits written as a decimal int (755 is the default).
 */
public final class WriteEntry {
    private final String path;
    private final Object data;
    private final Integer mode;
    private final String owner;
    private final String group;

    public WriteEntry(String path, Object data, Integer mode, String owner, String group) {
        this.path = path;
        this.data = data;
        this.mode = mode;
        this.owner = owner;
        this.group = group;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getPath() {
        return path;
    }

    public Object getData() {
        return data;
    }

    public Integer getMode() {
        return mode;
    }

    public String getOwner() {
        return owner;
    }

    public String getGroup() {
        return group;
    }

    /** Builder of {@link WriteEntry}. */
    public static final class Builder {
        private String path;
        private Object data;
        private Integer mode = 755;
        private String owner;
        private String group;

        public Builder path(String path) {
            this.path = path;
            return this;
        }

        public Builder data(Object data) {
            this.data = data;
            return this;
        }

        public Builder mode(Integer mode) {
            this.mode = mode;
            return this;
        }

        public Builder owner(String owner) {
            this.owner = owner;
            return this;
        }

        public Builder group(String group) {
            this.group = group;
            return this;
        }

        public WriteEntry build() {
            return new WriteEntry(path, data, mode, owner, group);
        }
    }
}
