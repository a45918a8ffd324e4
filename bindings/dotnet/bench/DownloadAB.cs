// Download-only program of bindings/dotnet/bench/download_ab.py: connects to sandbox argv[0],
// downloads argv[1] (argv[2] bytes) argv[3] times; one line per download: MB/s, client CPU ms,
// minor page faults (from /proc/self/stat).
using System;
using System.Diagnostics;
using System.Threading.Tasks;
using OpenSandbox;

internal static class DownloadAB
{
    private static async Task RunAsync(string[] a)
    {
        var size = long.Parse(a[2]);
        var n = int.Parse(a[3]);
        var sb = await Sandbox.ConnectAsync(new SandboxConnectOptions { SandboxId = a[0], SkipHealthCheck = true });
        for (var i = 0; i < n; i++)
        {
            var f0 = MinFlt();
            var cpu0 = Process.GetCurrentProcess().TotalProcessorTime;
            var sw = Stopwatch.StartNew();
            long got = 0;
            var en = sb.Files.ReadBytesStreamAsync(a[1]).GetAsyncEnumerator();
            while (await en.MoveNextAsync()) got += en.Current.Length;
            await en.DisposeAsync();
            var s = sw.Elapsed.TotalSeconds;
            var cpu = (Process.GetCurrentProcess().TotalProcessorTime - cpu0).TotalMilliseconds;
            if (got != size) throw new InvalidOperationException("download: " + got + " of " + size);
            Console.WriteLine(string.Format(System.Globalization.CultureInfo.InvariantCulture, "{0:F1} {1:F0} {2}", size / 1e6 / s, cpu, MinFlt() - f0));
        }
    }

    private static long MinFlt()
    {
        var st = System.IO.File.ReadAllText("/proc/self/stat");
        var rest = st.Substring(st.LastIndexOf(')') + 2).Split(' ');
        return long.Parse(rest[7]);
    }

    private static int Main(string[] a) { RunAsync(a).GetAwaiter().GetResult(); return 0; }
}
