// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.internal;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxError;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxInternalException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The JNI boundary: transport only. Ops, argument keys, results and error payloads are
 * the shared op layer's (bindings/common/README.md). Operations are JSON in, JSON out;
 * Java objects never cross: futures are registered here by id and completed when the
 * native side calls back ({@link #complete}). Execution events are pulled in batches
 * ({@code execution.next_batch}, one native call per batch) and dispatched to the
 * user's handlers on the pulling Java thread, never on a native runtime thread.
 */
public final class NativeBridge {
    private static final AtomicLong IDS = new AtomicLong();
    /** Most items one pull of a blocking run takes (the native side's queued batch size). */
    private static final int PULL_ITEMS = 4096;
    private static final Map<Long, CompletableFuture<Object>> FUTURES = new ConcurrentHashMap<>();
    /** Releases native handles of objects that were never closed. */
    private static final Cleaner CLEANER = Cleaner.create();
    /** The op that starts (and returns a pullable handle for) each run op. */
    private static final Map<String, String> START_OPS = Map.of(
            "commands.run", "commands.start",
            "commands.run_in_session", "commands.start_in_session",
            "code.run", "code.start",
            "isolation.run", "isolation.start");

    static {
        NativeLoader.load();
        init();
    }

    private NativeBridge() {}

    private static native void init();

    private static native String call(String op, String args);

    private static native void callAsync(long future, String op, String args);

    private static native byte[] nextEvents(long handle, int max);

    private static native void nextEventsAsync(long future, long handle, int max);

    private static native byte[] readBytes(String args);

    private static native void writeBytes(String args, byte[] data);

    private static native long downloadOpen(String args);

    private static native int downloadRead(long handle, byte[] buf, int off, int len);

    private static native void downloadClose(long handle);

    private static native long uploadOpen(String args);

    private static native boolean uploadWrite(long handle, byte[] buf, int off, int len);

    private static native void uploadAbort(long handle);

    private static native boolean uploadFile(String args, java.io.FileDescriptor fd);

    /** Frees a native handle (idempotent). */
    public static void release(long handle) {
        invoke("release", Json.obj("handle", handle));
    }

    /** Releases {@code handle} when {@code owner} becomes unreachable, or when cleaned. */
    public static Cleaner.Cleanable releaseOnGc(Object owner, long handle) {
        return CLEANER.register(owner, new Release(handle));
    }

    /** The cleaning action: holds the handle only, never the owner. */
    private static final class Release implements Runnable {
        private final long handle;

        Release(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            try {
                release(handle);
            } catch (RuntimeException e) {
                // Nothing to report to: the owner is gone.
            }
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

    /**
     * Runs a blocking run op ({@code commands.run}, {@code commands.run_in_session},
     * {@code code.run}) whose events go to {@code consumer} (may be null): the run is
     * started, then its events are pulled in batches and dispatched on this thread; the
     * result is the Execution folded by the native side.
     */
    public static Object invoke(String op, Map<String, Object> args, EventConsumer consumer) {
        if (consumer == null) {
            return invoke(op, args);
        }
        args.put("handlers", true);
        long h = Json.long_(((Map<?, ?>) invoke(startOp(op), args)).get("handle"));
        try {
            Object[] end = new Object[1];
            while (true) {
                byte[] batch;
                try {
                    batch = nextEvents(h, PULL_ITEMS);
                } catch (NativeError e) {
                    throw toException(e.getMessage(), e);
                }
                if (deliver(batch, consumer, end)) {
                    return outcome(end[0]);
                }
            }
        } finally {
            // Releasing a run that has not ended (a handler threw) cancels it.
            release(h);
        }
    }

    private static String startOp(String op) {
        String start = START_OPS.get(op);
        if (start == null) {
            throw new SandboxInternalException("no pullable variant of " + op, null, null, null);
        }
        return start;
    }

    /**
     * Dispatches the events of one batch; true (with the end item in {@code end[0]})
     * when the run's end item was in it. A handler's exception propagates. The batch
     * is in the native side's binary layout ({@code Batch::encode},
     * bindings/common/src/stream.rs; the C ABI's, bindings/ffi/API.md §4): {@code u8
     * done}, then per item {@code u8 kind} (0 JSON object, 1 stdout, 2 stderr), {@code
     * i64 timestamp}, {@code u32 length} (little-endian) and that many UTF-8 bytes (the
     * line, or the item's JSON). Output lines become strings straight from the buffer.
     */
    static boolean deliver(byte[] batch, EventConsumer consumer, Object[] end) {
        ByteBuffer b = ByteBuffer.wrap(batch).order(ByteOrder.LITTLE_ENDIAN);
        boolean done = b.get() != 0;
        while (b.hasRemaining()) {
            int kind = b.get();
            long ts = b.getLong();
            int len = b.getInt();
            int off = b.position();
            b.position(off + len);
            String text = new String(batch, off, len, StandardCharsets.UTF_8);
            if (kind == 0) {
                Map<?, ?> ev = (Map<?, ?>) Json.parse(text);
                if ("end".equals(ev.get("type"))) {
                    end[0] = ev;
                    return true;
                }
                dispatch(consumer, ev);
            } else {
                output(consumer, kind == 2 ? EventConsumer.STDERR : EventConsumer.STDOUT, text, ts);
            }
        }
        if (done) {
            throw new SandboxInternalException("the run ended without an outcome", null, null, null);
        }
        return false;
    }

    private static void output(EventConsumer consumer, int type, String text, long ts) {
        if (consumer == null) {
            return;
        }
        try {
            consumer.onEvent(type, text, ts, null, 0);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new SandboxInternalException("an execution handler failed: " + e, e, null, null);
        }
    }

    /** The Execution of an end item, or its error as the SDK exception. */
    private static Object outcome(Object endItem) {
        Map<?, ?> end = (Map<?, ?>) endItem;
        if (Boolean.TRUE.equals(end.get("ok"))) {
            return end.get("execution");
        }
        throw toException(Json.write(end.get("error")), null);
    }

    private static void dispatch(EventConsumer consumer, Map<?, ?> ev) {
        if (consumer == null) {
            return; // a run started without handlers has no events but its end item
        }
        String type = Json.str(ev.get("type"));
        Long tsBoxed = Json.long_(ev.get("timestamp"));
        long ts = tsBoxed == null ? 0 : tsBoxed;
        try {
            switch (type == null ? "" : type) {
                case "init":
                    consumer.onEvent(EventConsumer.INIT, Json.str(ev.get("id")), ts, null, 0);
                    break;
                case "stdout":
                    consumer.onEvent(EventConsumer.STDOUT, Json.str(ev.get("text")), ts, null, 0);
                    break;
                case "stderr":
                    consumer.onEvent(EventConsumer.STDERR, Json.str(ev.get("text")), ts, null, 0);
                    break;
                case "result":
                    consumer.onEvent(EventConsumer.RESULT, Json.str(ev.get("text")), ts, Json.write(ev.get("raw")), 0);
                    break;
                case "execution_complete": {
                    Long ms = Json.long_(ev.get("execution_time_ms"));
                    consumer.onEvent(EventConsumer.COMPLETE, null, ts, null, ms == null ? 0 : ms);
                    break;
                }
                case "error":
                    consumer.onEvent(EventConsumer.ERROR, Json.str(ev.get("name")), ts,
                            Json.write(Json.obj("value", ev.get("value"), "traceback", ev.get("traceback"))), 0);
                    break;
                default:
                    break;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new SandboxInternalException("an execution handler failed: " + e, e, null, null);
        }
    }

    /** Runs an operation on the native runtime; the future completes off that runtime. */
    public static CompletableFuture<Object> invokeAsync(String op, Map<String, Object> args) {
        long id = IDS.incrementAndGet();
        CompletableFuture<Object> f = new CompletableFuture<>();
        FUTURES.put(id, f);
        try {
            callAsync(id, op, Json.write(args));
        } catch (NativeError e) {
            FUTURES.remove(id);
            f.completeExceptionally(toException(e.getMessage(), e));
        }
        return f;
    }

    /**
     * As {@link #invoke(String, Map, EventConsumer)} without blocking: each batch is one
     * async native call, and its events are dispatched on a {@code ForkJoinPool} thread.
     * {@code consumer} may be null (the run is still started and pulled, so that it can
     * be cancelled). Cancelling the returned future ({@code cancel(true)}) releases the
     * run, which stops it and interrupts the command on the server (the op layer's one
     * cancellation rule, bindings/common/README.md §5).
     */
    public static CompletableFuture<Object> invokeAsync(String op, Map<String, Object> args, EventConsumer consumer) {
        String start;
        try {
            start = startOp(op);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        args.put("handlers", consumer != null);
        CompletableFuture<Object> result = new CompletableFuture<>();
        // The run's handle once started: 0 before, -1 once the future was cancelled.
        AtomicLong handle = new AtomicLong();
        result.whenComplete((v, e) -> {
            if (result.isCancelled()) {
                long h = handle.getAndSet(-1);
                if (h > 0) {
                    releaseQuietly(h);
                }
            }
        });
        invokeAsync(start, args).whenComplete((started, err) -> {
            if (err != null) {
                result.completeExceptionally(unwrap(err));
                return;
            }
            long h = Json.long_(((Map<?, ?>) started).get("handle"));
            if (!handle.compareAndSet(0, h)) {
                // Cancelled while starting: nobody will pull this run.
                releaseQuietly(h);
                return;
            }
            pull(h, consumer, result);
        });
        return result;
    }

    /**
     * {@code f.thenApply(fn)}, where cancelling the returned future cancels {@code f} too
     * (a plain {@code thenApply} stage does not pass cancellation back to its source).
     */
    public static <T> CompletableFuture<T> mapCancellable(CompletableFuture<Object> f, Function<Object, T> fn) {
        CompletableFuture<T> out = f.thenApply(fn);
        out.whenComplete((v, e) -> {
            if (out.isCancelled()) {
                f.cancel(true);
            }
        });
        return out;
    }

    private static void pull(long h, EventConsumer consumer, CompletableFuture<Object> result) {
        if (result.isDone()) {
            return; // cancelled: the cancellation released the handle
        }
        long id = IDS.incrementAndGet();
        CompletableFuture<Object> next = new CompletableFuture<>();
        FUTURES.put(id, next);
        try {
            nextEventsAsync(id, h, PULL_ITEMS);
        } catch (NativeError e) {
            FUTURES.remove(id);
            next.completeExceptionally(toException(e.getMessage(), e));
        }
        next.whenComplete((batch, err) -> {
            if (result.isDone()) {
                return;
            }
            try {
                if (err != null) {
                    throw unwrap(err);
                }
                Object[] end = new Object[1];
                if (deliver((byte[]) batch, consumer, end)) {
                    releaseQuietly(h);
                    result.complete(outcome(end[0]));
                    return;
                }
            } catch (Throwable t) {
                releaseQuietly(h);
                result.completeExceptionally(t);
                return;
            }
            pull(h, consumer, result);
        });
    }

    private static void releaseQuietly(long h) {
        try {
            release(h);
        } catch (RuntimeException e) {
            // The handle is gone either way.
        }
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
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

    static void completeBytes(long id, byte[] ok, String err) {
        CompletableFuture<Object> f = FUTURES.remove(id);
        if (f == null) {
            return;
        }
        ForkJoinPool.commonPool().execute(() -> {
            if (err != null) {
                f.completeExceptionally(toException(err, null));
            } else {
                f.complete(ok);
            }
        });
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

    /**
     * Uploads the rest of the regular file open as {@code fd} (from its current offset) with
     * the library reading the file itself. False, with nothing done, when {@code fd} is not an
     * open regular file (stream it instead). The offset ends at the file's end, or where it
     * was when the upload failed.
     */
    public static boolean uploadFileDescriptor(Map<String, Object> args, java.io.FileDescriptor fd) {
        try {
            return uploadFile(Json.write(args), fd);
        } catch (NativeError e) {
            throw toException(e.getMessage(), e);
        }
    }

    public static void finishUpload(long handle) {
        invoke("upload.finish", Json.obj("handle", handle));
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
