// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.pty;

/** A slice of a background command's log at byte {@code offset}. */
public final class LogChunk {
    private final long offset;
    private final byte[] data;

    public LogChunk(long offset, byte[] data) {
        this.offset = offset;
        this.data = data.clone();
    }

    public long getOffset() {
        return offset;
    }

    public byte[] getData() {
        return data.clone();
    }
}
