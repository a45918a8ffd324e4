// Benchmark of the JVM package (make bench-jvm): prints figures, one run, against the
// server in OPEN_SANDBOX_DOMAIN. The official Kotlin SDK (com.alibaba.opensandbox:sandbox
// 1.0.12) does not resolve from Maven Central here, so the comparison column is a
// java.net.http client written the way the official SDK works: one request per call,
// SSE read line by line to the end of the stream with JSON decoded per line, multipart
// upload streamed from an InputStream, download read from the response stream.
import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxEndpoint;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.stream.Stream;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

public final class Bench {
    static double p50(long[] ns) {
        long[] s = ns.clone();
        Arrays.sort(s);
        return s[s.length / 2] / 1e6;
    }

    /** The baseline: plain HTTP to execd, the official SDK's way. */
    static final class Baseline {
        final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        final String base;
        final Map<String, String> headers;

        Baseline(SandboxEndpoint ep) {
            this.base = "http://" + ep.getEndpoint();
            this.headers = ep.getHeaders();
        }

        HttpRequest.Builder req(String path) {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
            headers.forEach(b::header);
            return b;
        }

        Object fileInfo(String path) throws Exception {
            String q = URLEncoder.encode(path, StandardCharsets.UTF_8);
            HttpResponse<String> r = http.send(req("/files/info?path=" + q).GET().build(), HttpResponse.BodyHandlers.ofString());
            return Json.parse(r.body());
        }

        long run(String command) throws Exception {
            String body = Json.write(Json.obj("command", command, "background", false));
            HttpResponse<Stream<String>> r = http.send(req("/command").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofLines());
            long[] bytes = {0};
            try (Stream<String> lines = r.body()) {
                lines.forEach(line -> {
                    String l = line.startsWith("data:") ? line.substring(5).trim() : line.trim();
                    if (l.isEmpty() || l.startsWith(":")) {
                        return;
                    }
                    Map<?, ?> ev = (Map<?, ?>) Json.parse(l);
                    if ("stdout".equals(ev.get("type"))) {
                        bytes[0] += String.valueOf(ev.get("text")).length() + 1;
                    }
                });
            }
            return bytes[0];
        }

        void upload(String path, InputStream data) throws Exception {
            String boundary = "bench" + System.nanoTime();
            String meta = Json.write(Json.obj("path", path, "mode", 755));
            String head = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
                    + "Content-Type: application/json\r\n\r\n" + meta + "\r\n--" + boundary
                    + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
                    + "Content-Type: application/octet-stream\r\n\r\n";
            String tail = "\r\n--" + boundary + "--\r\n";
            InputStream body = new SequenceInputStream(new ByteArrayInputStream(head.getBytes(StandardCharsets.UTF_8)),
                    new SequenceInputStream(data, new ByteArrayInputStream(tail.getBytes(StandardCharsets.UTF_8))));
            HttpResponse<String> r = http.send(req("/files/upload")
                    .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                    .POST(HttpRequest.BodyPublishers.ofInputStream(() -> body)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() / 100 != 2) {
                throw new IllegalStateException("upload failed: " + r.statusCode() + " " + r.body());
            }
        }

        long download(String path) throws Exception {
            String q = URLEncoder.encode(path, StandardCharsets.UTF_8);
            HttpResponse<InputStream> r = http.send(req("/files/download?path=" + q).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            long got = 0;
            try (InputStream in = r.body()) {
                byte[] buf = new byte[1 << 20];
                int n;
                while ((n = in.read(buf)) >= 0) {
                    got += n;
                }
            }
            return got;
        }
    }

    static InputStream generated(long size) {
        return new InputStream() {
            long left = size;

            @Override
            public int read() {
                return left-- > 0 ? 'b' : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (left <= 0) {
                    return -1;
                }
                int n = (int) Math.min(len, left);
                Arrays.fill(b, off, off + n, (byte) 'b');
                left -= n;
                return n;
            }
        };
    }

    static final String STDOUT_100MB = "head -c 104857600 /dev/zero | tr '\\0' a | fold -w 1023";

    public static void main(String[] args) throws Exception {
        try (Sandbox sb = Sandbox.builder().image("python:3.11").build()) {
            sb.files().writeFile("/tmp/bench-info.txt", "x");
            List<String> paths = List.of("/tmp/bench-info.txt");
            for (int i = 0; i < 20; i++) {
                sb.files().readFileInfo(paths);
            }
            long[] info = new long[300];
            for (int i = 0; i < info.length; i++) {
                long t = System.nanoTime();
                sb.files().readFileInfo(paths);
                info[i] = System.nanoTime() - t;
            }
            long[] run = new long[100];
            for (int i = 0; i < run.length; i++) {
                long t = System.nanoTime();
                sb.commands().run("true");
                run[i] = System.nanoTime() - t;
            }
            AtomicLong bytes = new AtomicLong();
            ExecutionHandlers h = ExecutionHandlers.builder()
                    .onStdout(m -> bytes.addAndGet(m.getText().length() + 1)).skipAccumulation().build();
            long t0 = System.nanoTime();
            sb.commands().run(RunCommandRequest.builder()
                    .command(STDOUT_100MB).handlers(h).build());
            double stdoutS = (System.nanoTime() - t0) / 1e9;

            final long size = 256L << 20;
            InputStream gen = generated(size);
            t0 = System.nanoTime();
            sb.files().writeFile("/tmp/bench-256m.bin", gen);
            double upS = (System.nanoTime() - t0) / 1e9;
            t0 = System.nanoTime();
            long got = 0;
            try (InputStream in = sb.files().readStream("/tmp/bench-256m.bin")) {
                byte[] buf = new byte[1 << 20];
                int n;
                while ((n = in.read(buf)) >= 0) {
                    got += n;
                }
            }
            double downS = (System.nanoTime() - t0) / 1e9;

            Baseline bl = new Baseline(sb.getEndpoint(44772));
            for (int i = 0; i < 20; i++) {
                bl.fileInfo("/tmp/bench-info.txt");
            }
            long[] bInfo = new long[300];
            for (int i = 0; i < bInfo.length; i++) {
                long t = System.nanoTime();
                bl.fileInfo("/tmp/bench-info.txt");
                bInfo[i] = System.nanoTime() - t;
            }
            long[] bRun = new long[10];
            for (int i = 0; i < bRun.length; i++) {
                long t = System.nanoTime();
                bl.run("true");
                bRun[i] = System.nanoTime() - t;
            }
            t0 = System.nanoTime();
            long bBytes = bl.run(STDOUT_100MB);
            double bStdoutS = (System.nanoTime() - t0) / 1e9;
            t0 = System.nanoTime();
            bl.upload("/tmp/bench-256m-b.bin", generated(size));
            double bUpS = (System.nanoTime() - t0) / 1e9;
            t0 = System.nanoTime();
            long bGot = bl.download("/tmp/bench-256m-b.bin");
            double bDownS = (System.nanoTime() - t0) / 1e9;
            sb.kill();

            double oursStdout = bytes.get() / 1048576.0 / stdoutS;
            double baseStdout = bBytes / 1048576.0 / bStdoutS;
            double oursDown = got / 1048576.0 / downS;
            double baseDown = bGot / 1048576.0 / bDownS;
            System.out.println("| operation (release server, one run) | ours (JNI over the core) | baseline (java.net.http, official SDK's way) | ours vs baseline |");
            System.out.println("|---|---|---|---|");
            System.out.printf("| getFileInfo p50 | %.2f ms | %.2f ms | %.2fx faster |%n", p50(info), p50(bInfo), p50(bInfo) / p50(info));
            System.out.printf("| run(\"true\") p50 | %.2f ms | %.2f ms | %.2fx faster |%n", p50(run), p50(bRun), p50(bRun) / p50(run));
            System.out.printf("| 100 MB stdout into a handler | %.1f MB/s | %.1f MB/s | %.2fx |%n", oursStdout, baseStdout, oursStdout / baseStdout);
            System.out.printf("| 256 MB upload | %.1f MB/s | %.1f MB/s | %.2fx |%n", 256 / upS, 256 / bUpS, bUpS / upS);
            System.out.printf("| 256 MB download | %.1f MB/s | %.1f MB/s | %.2fx |%n", oursDown, baseDown, oursDown / baseDown);
            System.out.println("official Kotlin SDK 1.0.12: not resolvable from Maven Central here; baseline column instead");
        }
    }
}
