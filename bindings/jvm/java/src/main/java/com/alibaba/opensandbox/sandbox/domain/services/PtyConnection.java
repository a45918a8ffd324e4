// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtyRead;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

/**
 * An attached PTY session: {@link #getInputStream()} reads terminal output,
 * {@link #getOutputStream()} types ({@code "\r"} is Enter), {@link #close()} detaches
 * (the shell keeps running: reattach with {@code since = getNextOffset()}).
 */
public final class PtyConnection implements AutoCloseable {
    private final String sessionId;
    private final String mode;
    private long handle;
    private long nextOffset;
    private Integer exitCode;
    private Integer closeCode;
    private boolean done;
    private byte[] pending = new byte[0];
    private int pendingAt;
    private final InputStream in = new In();
    private final OutputStream out = new Out();

    PtyConnection(long handle, String sessionId, String mode, long since) {
        this.handle = handle;
        this.sessionId = sessionId;
        this.mode = mode;
        this.nextOffset = since;
    }

    public String getSessionId() {
        return sessionId;
    }

    /** {@code pty} or {@code pipe}: how the shell really runs. */
    public String getMode() {
        return mode;
    }

    /** The offset after the last byte read: pass it as {@code since} to resume exactly. */
    public synchronized long getNextOffset() {
        return nextOffset - (pending.length - pendingAt);
    }

    public synchronized Integer getExitCode() {
        return exitCode;
    }

    public synchronized Integer getCloseCode() {
        return closeCode;
    }

    private synchronized long handle() {
        if (handle == 0) {
            throw new IllegalStateException("the pty connection is closed");
        }
        return handle;
    }

    /** What has arrived (waiting for it), one channel at a time. */
    public PtyRead read() {
        return read(null, false, null);
    }

    /**
     * One read: with {@code until}, all output until it contains that text; with
     * {@code untilExit}, until the shell exits and the connection closes; {@code timeout}
     * bounds the wait ({@code isTimedOut()} then).
     */
    public PtyRead read(String until, boolean untilExit, Duration timeout) {
        Map<String, Object> args = Json.obj("handle", handle(), "until", until);
        if (untilExit) {
            args.put("until_exit", true);
        }
        if (timeout != null) {
            args.put("wait_ms", timeout.toMillis());
        }
        PtyRead r = PtyRead.fromJson(NativeBridge.invoke("pty.read", args));
        synchronized (this) {
            nextOffset = r.getNextOffset();
            if (r.getExitCode() != null) {
                exitCode = r.getExitCode();
            }
            if (r.getCloseCode() != null) {
                closeCode = r.getCloseCode();
            }
            done = r.isDone();
        }
        return r;
    }

    public void write(byte[] data) {
        if (data.length == 0) {
            return;
        }
        NativeBridge.invoke("pty.write",
                Json.obj("handle", handle(), "data_b64", Base64.getEncoder().encodeToString(data)));
    }

    /** Types text (UTF-8). */
    public void write(String text) {
        write(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Sets the terminal size (the foreground program gets SIGWINCH). */
    public void resize(int cols, int rows) {
        NativeBridge.invoke("pty.resize", Json.obj("handle", handle(), "cols", cols, "rows", rows));
    }

    /** SIGINT, SIGTERM, SIGKILL, SIGQUIT or SIGHUP to the shell's process group. */
    public void signal(String name) {
        NativeBridge.invoke("pty.signal", Json.obj("handle", handle(), "signal", name));
    }

    public InputStream getInputStream() {
        return in;
    }

    public OutputStream getOutputStream() {
        return out;
    }

    /** Detaches; the shell keeps running. */
    @Override
    public void close() {
        long h;
        synchronized (this) {
            h = handle;
            handle = 0;
            done = true;
        }
        if (h == 0) {
            return;
        }
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("pty.close", Json.obj("handle", h));
        Long next = Json.long_(r.get("next_offset"));
        synchronized (this) {
            if (next != null) {
                nextOffset = next;
            }
            pending = new byte[0];
            pendingAt = 0;
        }
    }

    private final class In extends InputStream {
        @Override
        public int read() {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            while (true) {
                synchronized (PtyConnection.this) {
                    if (pendingAt < pending.length) {
                        int n = Math.min(len, pending.length - pendingAt);
                        System.arraycopy(pending, pendingAt, b, off, n);
                        pendingAt += n;
                        return n;
                    }
                    if (done || handle == 0) {
                        return -1;
                    }
                }
                PtyRead r = PtyConnection.this.read();
                synchronized (PtyConnection.this) {
                    pending = r.getData();
                    pendingAt = 0;
                }
            }
        }

        @Override
        public void close() {
            PtyConnection.this.close();
        }
    }

    private final class Out extends OutputStream {
        @Override
        public void write(int b) {
            PtyConnection.this.write(new byte[] {(byte) b});
        }

        @Override
        public void write(byte[] b, int off, int len) {
            byte[] copy = new byte[len];
            System.arraycopy(b, off, copy, 0, len);
            PtyConnection.this.write(copy);
        }

        @Override
        public void close() {
            PtyConnection.this.close();
        }
    }
}
