// The JVM runner of `make bench` (scripts/bench/run.py): the shared workloads against the
// server in OPEN_SANDBOX_DOMAIN, one JSON line per column. The official Kotlin SDK (com.alibaba.opensandbox:sandbox
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

    static String env(String k, String d) {
        String v = System.getenv(k);
        return v == null ? d : v;
    }

    interface Call {
        void run() throws Exception;
    }

    static double p50(Call c, int n, int warm) throws Exception {
        for (int i = 0; i < warm; i++) {
            c.run();
        }
        long[] ns = new long[n];
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            c.run();
            ns[i] = System.nanoTime() - t;
        }
        return p50(ns);
    }

    static String json(String impl, double info, double run, double stdout, double up, double down) {
        return String.format(java.util.Locale.ROOT,
                "{\"lang\": \"java\", \"impl\": \"%s\", \"file_info_p50_ms\": %.4f, \"run_true_p50_ms\": %.4f, "
                        + "\"stdout_mb_s\": %.2f, \"upload_mb_s\": %.2f, \"download_mb_s\": %.2f}",
                impl, info, run, stdout, up, down);
    }

    /** One column of `make bench` (scripts/bench/run.py): the shared workloads (BENCH_*) through
     * this package and through the stand-in client, one JSON line each. */
    public static void main(String[] args) throws Exception {
        int infoCalls = Integer.parseInt(env("BENCH_INFO_CALLS", "200"));
        int runCalls = Integer.parseInt(env("BENCH_RUN_CALLS", "50"));
        String stdoutCmd = System.getenv("BENCH_STDOUT_CMD");
        long stdoutBytes = Long.parseLong(System.getenv("BENCH_STDOUT_BYTES"));
        java.io.File upload = new java.io.File(System.getenv("BENCH_UPLOAD_FILE"));
        long size = upload.length();
        try (Sandbox sb = Sandbox.builder().image("python:3.11").build()) {
            sb.files().writeFile("/tmp/bench/small.txt", "x");
            List<String> paths = List.of("/tmp/bench/small.txt");
            Baseline bl = new Baseline(sb.getEndpoint(44772));

            // The stand-in first, then ours.
            double bInfo = p50(() -> bl.fileInfo("/tmp/bench/small.txt"), infoCalls, 20);
            double bRun = p50(() -> bl.run("true"), runCalls, 5);
            long t0 = System.nanoTime();
            long bBytes = bl.run(stdoutCmd);
            double bStdout = stdoutBytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
            if (bBytes != stdoutBytes) {
                throw new IllegalStateException("stand-in stdout: " + bBytes + " of " + stdoutBytes);
            }
            t0 = System.nanoTime();
            try (InputStream in = new java.io.FileInputStream(upload)) {
                bl.upload("/tmp/bench/stand-in.bin", in);
            }
            double bUp = size / 1e6 / ((System.nanoTime() - t0) / 1e9);
            t0 = System.nanoTime();
            long bGot = bl.download("/tmp/bench/stand-in.bin");
            double bDown = size / 1e6 / ((System.nanoTime() - t0) / 1e9);
            if (bGot != size) {
                throw new IllegalStateException("stand-in download: " + bGot + " of " + size);
            }
            System.out.println(json("stand-in", bInfo, bRun, bStdout, bUp, bDown));

            double info = p50(() -> sb.files().readFileInfo(paths), infoCalls, 20);
            double run = p50(() -> sb.commands().run("true"), runCalls, 5);
            AtomicLong bytes = new AtomicLong();
            ExecutionHandlers h = ExecutionHandlers.builder()
                    .onStdout(m -> bytes.addAndGet(m.getText().length() + 1)).skipAccumulation().build();
            t0 = System.nanoTime();
            sb.commands().run(RunCommandRequest.builder().command(stdoutCmd).handlers(h).build());
            double stdout = stdoutBytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
            if (bytes.get() != stdoutBytes) {
                throw new IllegalStateException("stdout: " + bytes.get() + " of " + stdoutBytes);
            }
            t0 = System.nanoTime();
            try (InputStream in = new java.io.FileInputStream(upload)) {
                sb.files().writeFile("/tmp/bench/ours.bin", in);
            }
            double up = size / 1e6 / ((System.nanoTime() - t0) / 1e9);
            t0 = System.nanoTime();
            long got = 0;
            try (InputStream in = sb.files().readStream("/tmp/bench/ours.bin")) {
                byte[] buf = new byte[1 << 20];
                int n;
                while ((n = in.read(buf)) >= 0) {
                    got += n;
                }
            }
            double down = size / 1e6 / ((System.nanoTime() - t0) / 1e9);
            if (got != size) {
                throw new IllegalStateException("download: " + got + " of " + size);
            }
            System.out.println(json("ours", info, run, stdout, up, down));
            sb.kill();
        }
    }
}
