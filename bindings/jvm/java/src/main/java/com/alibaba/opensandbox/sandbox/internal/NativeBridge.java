// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.internal;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxError;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxInternalException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The JNI boundary. Operations are JSON in, JSON out; Java objects never cross: futures
 * and event consumers are registered here by id and looked up when the native side
 * calls back ({@link #complete}, {@link #onEvent}).
 */
public final class NativeBridge {
    private static final AtomicLong IDS = new AtomicLong();
    private static final Map<Long, CompletableFuture<Object>> FUTURES = new ConcurrentHashMap<>();
    private static final Map<Long, Consumer> CONSUMERS = new ConcurrentHashMap<>();

    static {
        NativeLoader.load();
        init();
    }

    private NativeBridge() {}

    private static native void init();

    private static native String call(String op, String args);

    private static native void callAsync(long future, String op, String args);

    private static native byte[] readBytes(String args);

    private static native void writeBytes(String args, byte[] data);

    private static native long downloadOpen(String args);

    private static native int downloadRead(long handle, byte[] buf, int off, int len);

    private static native void downloadClose(long handle);

    private static native long uploadOpen(String args);

    private static native boolean uploadWrite(long handle, byte[] buf, int off, int len);

    private static native void uploadAbort(long handle);

    /** A registered consumer plus the first exception its handlers threw. */
    private static final class Consumer {
        final EventConsumer target;
        volatile Throwable failure;

        Consumer(EventConsumer target) {
            this.target = target;
        }
    }

    /** Runs a blocking operation. */
    public static Object invoke(String op, Map<String, Object> args) {
        try {
            return Json.parse(call(op, Json.write(args)));
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    /** Runs a blocking operation whose events go to {@code consumer} (may be null). */
    public static Object invoke(String op, Map<String, Object> args, EventConsumer consumer) {
        if (consumer == null) {
            return invoke(op, args);
        }
        long id = IDS.incrementAndGet();
        Consumer c = new Consumer(consumer);
        CONSUMERS.put(id, c);
        args.put("consumer", id);
        try {
            return invoke(op, args);
        } catch (SandboxException e) {
            rethrowHandlerFailure(c);
            throw e;
        } finally {
            CONSUMERS.remove(id);
        }
    }

    /** Runs an operation on the native runtime; the future completes off that runtime. */
    public static CompletableFuture<Object> invokeAsync(String op, Map<String, Object> args, EventConsumer consumer) {
        long id = IDS.incrementAndGet();
        CompletableFuture<Object> f = new CompletableFuture<>();
        Consumer c = consumer == null ? null : new Consumer(consumer);
        CompletableFuture<Object> inner = new CompletableFuture<>();
        FUTURES.put(id, inner);
        if (c != null) {
            CONSUMERS.put(id, c);
            args.put("consumer", id);
        }
        inner.whenComplete((v, e) -> {
            CONSUMERS.remove(id);
            if (e == null) {
                f.complete(v);
            } else if (c != null && c.failure != null) {
                f.completeExceptionally(c.failure);
            } else {
                f.completeExceptionally(e);
            }
        });
        try {
            callAsync(id, op, Json.write(args));
        } catch (NativeError e) {
            FUTURES.remove(id);
            inner.completeExceptionally(toException(e.getMessage(), e));
        }
        return f;
    }

    public static CompletableFuture<Object> invokeAsync(String op, Map<String, Object> args) {
        return invokeAsync(op, args, null);
    }

    private static void rethrowHandlerFailure(Consumer c) {
        Throwable t = c.failure;
        if (t == null) {
            return;
        }
        if (t instanceof RuntimeException) {
            throw (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        throw new SandboxInternalException("an execution handler failed: " + t, t, null, null);
    }

    // ---- called from native code ----

    static void complete(long id, String ok, String err) {
        CompletableFuture<Object> f = FUTURES.remove(id);
        if (f == null) {
            return;
        }
        // Never run user continuations on a runtime worker.
        ForkJoinPool.commonPool().execute(() -> {
            if (err != null) {
                f.completeExceptionally(toException(err, null));
            } else {
                try {
                    f.complete(Json.parse(ok));
                } catch (RuntimeException e) {
                    f.completeExceptionally(e);
                }
            }
        });
    }

    static boolean onEvent(long id, int type, String text, long timestamp, String extra, long number) {
        Consumer c = CONSUMERS.get(id);
        if (c == null) {
            return true;
        }
        try {
            c.target.onEvent(type, text, timestamp, extra, number);
            return true;
        } catch (Throwable t) {
            if (c.failure == null) {
                c.failure = t;
            }
            return false;
        }
    }

    // ---- bytes ----

    public static byte[] readAll(Map<String, Object> args) {
        try {
            return readBytes(Json.write(args));
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    public static void writeAll(Map<String, Object> args, byte[] data) {
        try {
            writeBytes(Json.write(args), data);
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    public static long openDownload(Map<String, Object> args) {
        try {
            return downloadOpen(Json.write(args));
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    public static int readDownload(long handle, byte[] buf, int off, int len) {
        try {
            return downloadRead(handle, buf, off, len);
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    public static void closeDownload(long handle) {
        downloadClose(handle);
    }

    public static long openUpload(Map<String, Object> args) {
        try {
            return uploadOpen(Json.write(args));
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    /** False when the upload already ended (finish it to learn why). */
    public static boolean writeUpload(long handle, byte[] buf, int off, int len) {
        try {
            return uploadWrite(handle, buf, off, len);
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    public static void finishUpload(long handle) {
        invoke("upload.finish", Json.obj("upload", handle));
    }

    public static void abortUpload(long handle) {
        uploadAbort(handle);
    }

    // ---- errors ----

    /** The SDK exception for a native error object. */
    public static SandboxException toException(String json, Throwable cause) {
        Map<?, ?> m;
        try {
            Object o = Json.parse(json);
            m = o instanceof Map ? (Map<?, ?>) o : Map.of();
        } catch (RuntimeException e) {
            return new SandboxInternalException(String.valueOf(json), cause, null, null);
        }
        String kind = Json.str(m.get("kind"));
        String message = Json.str(m.get("message"));
        String code = Json.str(m.get("code"));
        String requestId = Json.str(m.get("request_id"));
        Integer status = Json.integer(m.get("status"));
        if (kind == null) {
            kind = "internal";
        }
        SandboxException e;
        switch (kind) {
            case "api":
            case "not_found":
            case "unauthorized":
                e = new SandboxApiException(message, status, cause,
                        new SandboxError(code != null ? code : SandboxError.UNEXPECTED_RESPONSE, message), requestId);
                break;
            case "ready_timeout":
                e = new SandboxReadyTimeoutException(message, cause,
                        new SandboxError(SandboxError.READY_TIMEOUT, message), requestId);
                break;
            case "invalid_argument":
                e = new InvalidArgumentException(message, cause,
                        new SandboxError(SandboxError.INVALID_ARGUMENT, message), requestId);
                break;
            default:
                if (status != null) {
                    e = new SandboxApiException(message, status, cause,
                            new SandboxError(code != null ? code : SandboxError.UNEXPECTED_RESPONSE, message), requestId);
                } else {
                    e = new SandboxInternalException(message, cause,
                            new SandboxError(code != null ? code : SandboxError.INTERNAL_UNKNOWN_ERROR, message), requestId);
                }
        }
        return e.withKind(kind);
    }
}
