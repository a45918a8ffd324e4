// The .NET runner of `make bench` (scripts/bench/run.py): the shared workloads (BENCH_*)
// through the C# SDK against the server of OPEN_SANDBOX_DOMAIN; one JSON line.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading.Tasks;
using OpenSandbox;
using OpenSandbox.Models;

internal static class Bench
{
    private static double P50(List<double> xs) { xs.Sort(); return xs[xs.Count / 2]; }

    private static string Env(string k, string d) { return Environment.GetEnvironmentVariable(k) ?? d; }

    private static async Task<double> P50Async(Func<Task> f, int n, int warm)
    {
        for (var i = 0; i < warm; i++) await f();
        var xs = new List<double>();
        for (var i = 0; i < n; i++)
        {
            var sw = Stopwatch.StartNew();
            await f();
            xs.Add(sw.Elapsed.TotalMilliseconds);
        }
        return P50(xs);
    }

    private static async Task RunAsync()
    {
        var infoCalls = int.Parse(Env("BENCH_INFO_CALLS", "200"));
        var runCalls = int.Parse(Env("BENCH_RUN_CALLS", "50"));
        var stdoutCmd = Env("BENCH_STDOUT_CMD", "");
        var stdoutBytes = long.Parse(Env("BENCH_STDOUT_BYTES", "0"));
        var uploadFile = Env("BENCH_UPLOAD_FILE", "");
        var size = new FileInfo(uploadFile).Length;
        var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.12" });
        try
        {
            await sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/bench/small.txt", Data = "x" } });
            var info = await P50Async(() => sb.Files.GetFileInfoAsync(new[] { "/tmp/bench/small.txt" }), infoCalls, 20);
            var run = await P50Async(() => sb.Commands.RunAsync("true"), runCalls, 5);

            long bytes = 0;
            var h = new ExecutionHandlers { SkipAccumulation = true, OnStdout = m => { bytes += m.Text.Length + 1; return Task.CompletedTask; } };
            var sw = Stopwatch.StartNew();
            await sb.Commands.RunAsync(stdoutCmd, null, h);
            var stdout = stdoutBytes / 1e6 / sw.Elapsed.TotalSeconds;
            if (bytes != stdoutBytes) throw new InvalidOperationException("stdout: " + bytes + " of " + stdoutBytes);

            sw = Stopwatch.StartNew();
            using (var src = File.OpenRead(uploadFile))
            {
                await sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/bench/ours.bin", Data = src } });
            }
            var up = size / 1e6 / sw.Elapsed.TotalSeconds;

            sw = Stopwatch.StartNew();
            long got = 0;
            var en = sb.Files.ReadBytesStreamAsync("/tmp/bench/ours.bin").GetAsyncEnumerator();
            while (await en.MoveNextAsync()) got += en.Current.Length;
            await en.DisposeAsync();
            var down = size / 1e6 / sw.Elapsed.TotalSeconds;
            if (got != size) throw new InvalidOperationException("download: " + got + " of " + size);
            // The closing brace is appended, not escaped: in "{4:F2}}}" .NET reads the "}}"
            // as part of the format item ("F2}"), which printed a literal F2 (invalid JSON).
            Console.WriteLine(string.Format(System.Globalization.CultureInfo.InvariantCulture,
                "{{\"lang\": \"dotnet\", \"impl\": \"ours\", \"file_info_p50_ms\": {0:F4}, \"run_true_p50_ms\": {1:F4}, \"stdout_mb_s\": {2:F2}, \"upload_mb_s\": {3:F2}, \"download_mb_s\": {4:F2}",
                info, run, stdout, up, down) + "}");
        }
        finally
        {
            await sb.KillAsync();
            sb.Dispose();
        }
    }

    private static void Main() { RunAsync().GetAwaiter().GetResult(); }
}
