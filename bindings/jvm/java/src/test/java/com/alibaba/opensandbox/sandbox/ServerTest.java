package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.codeinterpreter.CodeInterpreter;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.EntryInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PagedSandboxInfos;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxState;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** Against the real reference server (scripts/with-server.sh sets OPEN_SANDBOX_DOMAIN). */
@EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
class ServerTest {
    static Sandbox sb;

    @BeforeAll
    static void create() {
        sb = Sandbox.builder().image("python:3.11").metadata("suite", "jvm").build();
    }

    @AfterAll
    static void kill() {
        if (sb != null) {
            sb.kill();
            sb.close();
        }
    }

    @Test
    void quickstartRunsACommand() {
        Execution e = sb.commands().run("echo 'Hello Sandbox!'");
        assertEquals("Hello Sandbox!", e.getLogs().getStdout().get(0).getText());
        assertEquals(0, e.getExitCode());
        assertNotNull(e.getId());
        assertNotNull(e.getComplete());
    }

    @Test
    void failingCommandHasExitCodeAndError() {
        Execution e = sb.commands().run("echo oops >&2; exit 3");
        assertEquals(3, e.getExitCode());
        assertEquals("3", e.getError().getValue());
        assertEquals("oops", e.getLogs().getStderr().get(0).getText());
        assertTrue(e.getLogs().getStderr().get(0).isError());
    }

    @Test
    void handlersAreCalledInOrder() {
        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        ExecutionHandlers h = ExecutionHandlers.builder()
                .onInit(id -> seen.add("init"))
                .onStdout(m -> seen.add("out:" + m.getText()))
                .onStderr(m -> seen.add("err:" + m.getText()))
                .onExecutionComplete(c -> seen.add("complete"))
                .build();
        sb.commands().run(RunCommandRequest.builder().command("echo a; echo b >&2; echo c").handlers(h).build());
        assertEquals("init", seen.get(0));
        assertEquals("complete", seen.get(seen.size() - 1));
        assertTrue(seen.indexOf("out:a") < seen.indexOf("out:c"));
        assertTrue(seen.contains("err:b"));
    }

    @Test
    void aThrowingHandlerStopsTheRunAndItsExceptionSurfaces() {
        IllegalStateException boom = new IllegalStateException("boom");
        ExecutionHandlers h = ExecutionHandlers.builder().onStdout(m -> {
            throw boom;
        }).build();
        IllegalStateException got = assertThrows(IllegalStateException.class,
                () -> sb.commands().run(RunCommandRequest.builder().command("echo x; sleep 5").handlers(h).build()));
        assertSame(boom, got);
    }

    @Test
    void asyncRunCompletesOffTheRuntimeThreads() throws Exception {
        List<String> threads = Collections.synchronizedList(new ArrayList<>());
        ExecutionHandlers h = ExecutionHandlers.builder().onStdout(m -> threads.add(Thread.currentThread().getName())).build();
        String continuation = sb.commands()
                .runAsync(RunCommandRequest.builder().command("echo async").handlers(h).build())
                .thenApply(e -> {
                    assertEquals("async", e.getLogs().getStdout().get(0).getText());
                    return Thread.currentThread().getName();
                })
                .get(60, TimeUnit.SECONDS);
        assertFalse(continuation.startsWith("opensandbox-"), continuation);
        assertEquals(1, threads.size());
        // Events are pulled in batches and handed to the handlers on a Java pool
        // thread: user code never runs on a native runtime thread.
        assertFalse(threads.get(0).startsWith("opensandbox-"), threads.get(0));
        assertEquals(sb.getId(), sb.getInfoAsync().get(30, TimeUnit.SECONDS).getId());
    }

    @Test
    void blockingCallInsideAnAsyncHandlerWorks() throws Exception {
        // Handlers run off the native runtime, so a blocking call inside one neither
        // deadlocks nor is refused.
        List<String> ids = Collections.synchronizedList(new ArrayList<>());
        ExecutionHandlers h = ExecutionHandlers.builder().onStdout(m -> ids.add(sb.getInfo().getId())).build();
        Execution e = sb.commands().runAsync(RunCommandRequest.builder().command("echo x").handlers(h).build())
                .get(60, TimeUnit.SECONDS);
        assertEquals(0, e.getExitCode());
        assertEquals(List.of(sb.getId()), ids);
    }

    @Test
    void asyncRunWithoutHandlersKeepsOutputAndOutcome() throws Exception {
        Execution e = sb.commands().runAsync("echo plain; exit 4").get(60, TimeUnit.SECONDS);
        assertEquals("plain", e.getLogs().getStdout().get(0).getText());
        assertEquals(4, e.getExitCode());
    }

    @Test
    void cancellingAnAsyncRunStopsTheCommandOnTheServer() throws Exception {
        // The op layer's one cancellation rule: cancel(true) releases the run, which
        // interrupts the command on the server (a dropped connection alone would not).
        java.util.concurrent.CompletableFuture<String> id = new java.util.concurrent.CompletableFuture<>();
        ExecutionHandlers h = ExecutionHandlers.builder().onInit(id::complete).build();
        java.util.concurrent.CompletableFuture<Execution> run = sb.commands()
                .runAsync(RunCommandRequest.builder().command("sleep 30").handlers(h).build());
        String execId = id.get(30, TimeUnit.SECONDS);
        assertTrue(run.cancel(true));
        assertThrows(java.util.concurrent.CancellationException.class, run::join);
        boolean running = true;
        for (int i = 0; i < 80 && running; i++) {
            Thread.sleep(100);
            running = Boolean.TRUE.equals(sb.commands().getCommandStatus(execId).getRunning());
        }
        assertFalse(running, "the command still runs 8 s after the cancel");
    }

    @Test
    void filesRoundTripBytesAndStreams() throws Exception {
        byte[] data = new byte[5 * 1024 * 1024 + 17];
        new Random(7).nextBytes(data);
        sb.files().writeFile("/tmp/jvm-blob.bin", new ByteArrayInputStream(data));
        assertArrayEquals(data, sb.files().readByteArray("/tmp/jvm-blob.bin"));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = sb.files().readStream("/tmp/jvm-blob.bin")) {
            in.transferTo(out);
        }
        assertArrayEquals(data, out.toByteArray());
        // Reads into the middle of an array (the library copies each received slice at
        // the offset, never past off + len): every byte once, the guard bytes untouched.
        out.reset();
        byte[] buf = new byte[1 << 20];
        try (InputStream in = sb.files().readStream("/tmp/jvm-blob.bin")) {
            for (int round = 0; ; round++) {
                int off = 3 + round % 5;
                int len = round % 2 == 0 ? 7777 : buf.length - off - 9;
                int guardEnd = Math.min(buf.length, off + len + 9);
                java.util.Arrays.fill(buf, 0, guardEnd, (byte) 0x5a);
                int n = in.read(buf, off, len);
                if (n < 0) {
                    break;
                }
                assertTrue(n > 0 && n <= len, "read " + n + " of at most " + len);
                for (int i = 0; i < off; i++) {
                    assertEquals((byte) 0x5a, buf[i]);
                }
                for (int i = off + n; i < guardEnd; i++) {
                    assertEquals((byte) 0x5a, buf[i]);
                }
                out.write(buf, off, n);
            }
        }
        assertArrayEquals(data, out.toByteArray());
        sb.files().writeFile("/tmp/jvm-hello.txt", "héllo\nworld\n");
        assertEquals("world", sb.files().readFile("/tmp/jvm-hello.txt", "UTF-8", null, 2L, 1L).trim());
        Map<String, EntryInfo> info = sb.files().readFileInfo(List.of("/tmp/jvm-hello.txt"));
        assertEquals(13L, info.get("/tmp/jvm-hello.txt").getSize());
        assertEquals("héllo\nworld\n", new String(sb.files().readByteArray("/tmp/jvm-hello.txt"), StandardCharsets.UTF_8));
    }

    @Test
    void downloadsOpenOnOneThreadReadOnAnotherAndInterleaved() throws Exception {
        // A download is opened on a driver of its own (the reading thread reads the
        // socket): reading it from another thread, and two at once on one thread, still
        // gives every byte in order.
        byte[] data = new byte[3 * 1024 * 1024 + 5];
        new Random(11).nextBytes(data);
        sb.files().writeFile("/tmp/jvm-driven.bin", new ByteArrayInputStream(data));
        InputStream opened = sb.files().readStream("/tmp/jvm-driven.bin");
        java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            byte[] got = other.submit(() -> {
                try (InputStream in = opened) {
                    return in.readAllBytes();
                }
            }).get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertArrayEquals(data, got);
        } finally {
            other.shutdown();
        }
        ByteArrayOutputStream a = new ByteArrayOutputStream();
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (InputStream ina = sb.files().readStream("/tmp/jvm-driven.bin");
                InputStream inb = sb.files().readStream("/tmp/jvm-driven.bin")) {
            byte[] buf = new byte[64 * 1024];
            boolean moreA = true;
            boolean moreB = true;
            while (moreA || moreB) {
                if (moreA) {
                    int n = ina.read(buf);
                    moreA = n >= 0;
                    if (moreA) {
                        a.write(buf, 0, n);
                    }
                }
                if (moreB) {
                    int n = inb.read(buf);
                    moreB = n >= 0;
                    if (moreB) {
                        b.write(buf, 0, n);
                    }
                }
            }
        }
        assertArrayEquals(data, a.toByteArray());
        assertArrayEquals(data, b.toByteArray());
    }

    @Test
    void fileInputStreamUploadsTheRestOfItsFileAndEndsAtTheEnd() throws Exception {
        // The descriptor path (the library reads the file): from the stream's position, and
        // the position ends where reading the stream whole leaves it.
        byte[] data = new byte[3 * 1024 * 1024 + 5];
        new Random(11).nextBytes(data);
        java.nio.file.Path f = java.nio.file.Files.createTempFile("jvm-up", ".bin");
        try {
            java.nio.file.Files.write(f, data);
            try (java.io.FileInputStream in = new java.io.FileInputStream(f.toFile())) {
                assertEquals(1000, in.readNBytes(1000).length);
                sb.files().writeFile("/tmp/jvm-fd.bin", in);
                assertEquals(data.length, in.getChannel().position());
                assertEquals(-1, in.read());
            }
            assertArrayEquals(java.util.Arrays.copyOfRange(data, 1000, data.length),
                    sb.files().readByteArray("/tmp/jvm-fd.bin"));
            // File and Path data open as FileInputStreams: the whole file.
            sb.files().writeFile("/tmp/jvm-file.bin", f.toFile());
            assertArrayEquals(data, sb.files().readByteArray("/tmp/jvm-file.bin"));
            sb.files().writeFile("/tmp/jvm-path.bin", f);
            assertArrayEquals(data, sb.files().readByteArray("/tmp/jvm-path.bin"));
            // A subclass may read other bytes than the file's: it is streamed through read().
            try (java.io.FileInputStream in = new java.io.FileInputStream(f.toFile()) {
                @Override
                public int read(byte[] b) throws java.io.IOException {
                    return read(b, 0, b.length);
                }

                @Override
                public int read(byte[] b, int off, int len) throws java.io.IOException {
                    int n = super.read(b, off, len);
                    for (int i = 0; i < n; i++) {
                        b[off + i] = (byte) ~b[off + i];
                    }
                    return n;
                }
            }) {
                sb.files().writeFile("/tmp/jvm-sub.bin", in);
            }
            byte[] flipped = data.clone();
            for (int i = 0; i < flipped.length; i++) {
                flipped[i] = (byte) ~flipped[i];
            }
            assertArrayEquals(flipped, sb.files().readByteArray("/tmp/jvm-sub.bin"));
            // Not a regular file (a device): streamed, not refused.
            try (java.io.FileInputStream in = new java.io.FileInputStream("/dev/null")) {
                sb.files().writeFile("/tmp/jvm-null.bin", in);
            }
            assertEquals(0, sb.files().readByteArray("/tmp/jvm-null.bin").length);
            // A failed upload (the parent is a file) leaves the position where it was.
            try (java.io.FileInputStream in = new java.io.FileInputStream(f.toFile())) {
                assertEquals(10, in.readNBytes(10).length);
                assertThrows(SandboxException.class, () -> sb.files().writeFile("/tmp/jvm-fd.bin/child", in));
                assertEquals(10, in.getChannel().position());
            }
            // A closed stream fails as reading it does.
            java.io.FileInputStream closed = new java.io.FileInputStream(f.toFile());
            closed.close();
            assertThrows(SandboxException.class, () -> sb.files().writeFile("/tmp/jvm-closed.bin", closed));
        } finally {
            java.nio.file.Files.deleteIfExists(f);
        }
    }

    @Test
    void errorsKeepStatusAndRequestId() {
        try (SandboxManager m = SandboxManager.builder().build()) {
            SandboxApiException e = assertThrows(SandboxApiException.class, () -> m.getSandboxInfo("does-not-exist"));
            assertEquals(404, e.getStatusCode());
            assertNotNull(e.getRequestId());
            assertEquals("not_found", e.getKind());
        }
        ConnectionConfig bad = ConnectionConfig.builder().apiKey("wrong").build();
        try (SandboxManager m = SandboxManager.builder().connectionConfig(bad).build()) {
            SandboxApiException e = assertThrows(SandboxApiException.class, () -> m.listSandboxInfos(null));
            assertEquals(401, e.getStatusCode());
        }
    }

    @Test
    void managerListsByMetadataAndClosedHandlesAreRejected() {
        try (SandboxManager m = SandboxManager.builder().build()) {
            PagedSandboxInfos page = m.listSandboxInfos(SandboxFilter.builder().states(SandboxState.RUNNING).metadata(Map.of("suite", "jvm")).build());
            assertTrue(page.getSandboxInfos().stream().anyMatch(i -> i.getId().equals(sb.getId())));
        }
        Sandbox other = Sandbox.connector().sandboxId(sb.getId()).skipHealthCheck().connect();
        other.close();
        other.close(); // idempotent
        SandboxException e = assertThrows(SandboxException.class, other::getInfo);
        assertEquals("invalid_argument", e.getKind());
    }

    @Test
    void pauseThenResumeKeepsFiles() throws Exception {
        Sandbox other = Sandbox.builder().image("python:3.11").build();
        try {
            other.files().writeFile("/tmp/keep.txt", "kept");
            other.pause();
            String state = other.getInfo().getStatus().getState();
            for (int i = 0; i < 100 && !state.equals("Paused"); i++) {
                Thread.sleep(100);
                state = other.getInfo().getStatus().getState();
            }
            assertEquals("Paused", state);
            other.resume();
            assertEquals("Running", other.getInfo().getStatus().getState());
            assertEquals("kept", other.files().readFile("/tmp/keep.txt"));
        } finally {
            other.kill();
            other.close();
        }
    }

    @Test
    void codeInterpreterRunsPython() {
        CodeInterpreter ci = CodeInterpreter.builder().fromSandbox(sb).build();
        Execution e = ci.codes().run("print(6 * 7)", "python");
        assertEquals("42", e.getLogs().getStdout().get(0).getText().trim());
    }
}
