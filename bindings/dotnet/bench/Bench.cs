// make bench-dotnet: figures of the C# SDK against a release server (scripts/with-server.sh).
// Prints one line per row; no assertions.

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

    private static async Task RunAsync()
    {
        var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.12" });
        try
        {
            await sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/b.txt", Data = "x" } });
            var rt = new List<double>();
            for (var i = 0; i < 200; i++)
            {
                var sw = Stopwatch.StartNew();
                await sb.Files.GetFileInfoAsync(new[] { "/tmp/b.txt" });
                rt.Add(sw.Elapsed.TotalMilliseconds);
            }
            Console.WriteLine("get_file_info round trip p50: {0:F2} ms", P50(rt));

            var runs = new List<double>();
            for (var i = 0; i < 50; i++)
            {
                var sw = Stopwatch.StartNew();
                await sb.Commands.RunAsync("true");
                runs.Add(sw.Elapsed.TotalMilliseconds);
            }
            Console.WriteLine("run(\"true\") p50: {0:F2} ms", P50(runs));

            long bytes = 0;
            var h = new ExecutionHandlers { SkipAccumulation = true, OnStdout = m => { bytes += m.Text.Length + 1; return Task.CompletedTask; } };
            var sw2 = Stopwatch.StartNew();
            await sb.Commands.RunAsync("yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxy | head -c 104857600", null, h);
            Console.WriteLine("100 MB stdout into a handler: {0:F1} MB/s ({1} bytes)", bytes / 1048576.0 / sw2.Elapsed.TotalSeconds, bytes);

            const int mb = 256;
            var chunk = new byte[1 << 20];
            new Random(1).NextBytes(chunk);
            var sw3 = Stopwatch.StartNew();
            await sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/big.bin", Data = new RepeatStream(chunk, mb) } });
            Console.WriteLine("{0} MB upload: {1:F1} MB/s", mb, mb / sw3.Elapsed.TotalSeconds);
            var sw4 = Stopwatch.StartNew();
            long got = 0;
            var en = sb.Files.ReadBytesStreamAsync("/tmp/big.bin").GetAsyncEnumerator();
            while (await en.MoveNextAsync()) got += en.Current.Length;
            await en.DisposeAsync();
            Console.WriteLine("{0} MB download: {1:F1} MB/s", got >> 20, (got / 1048576.0) / sw4.Elapsed.TotalSeconds);
        }
        finally
        {
            await sb.KillAsync();
            sb.Dispose();
        }
    }

    private sealed class RepeatStream : Stream
    {
        private readonly byte[] _chunk;
        private long _left;
        public RepeatStream(byte[] chunk, int times) { _chunk = chunk; _left = (long)chunk.Length * times; }
        public override int Read(byte[] buffer, int offset, int count)
        {
            var n = (int)Math.Min(Math.Min(count, _chunk.Length), _left);
            Buffer.BlockCopy(_chunk, 0, buffer, offset, n);
            _left -= n;
            return n;
        }
        public override bool CanRead { get { return true; } }
        public override bool CanSeek { get { return false; } }
        public override bool CanWrite { get { return false; } }
        public override long Length { get { throw new NotSupportedException(); } }
        public override long Position { get { throw new NotSupportedException(); } set { throw new NotSupportedException(); } }
        public override void Flush() { }
        public override long Seek(long o, SeekOrigin s) { throw new NotSupportedException(); }
        public override void SetLength(long v) { throw new NotSupportedException(); }
        public override void Write(byte[] b, int o, int c) { throw new NotSupportedException(); }
    }

    private static void Main() { RunAsync().GetAwaiter().GetResult(); }
}
