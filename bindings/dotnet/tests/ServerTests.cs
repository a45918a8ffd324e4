// Tests against the real reference server (OPENSANDBOX_SERVER_BIN, started once for the
// namespace on a free port with a throw-away data dir). They go through the public API
// only, as a user would.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using OpenSandbox;
using OpenSandbox.CodeInterpreter;
using OpenSandbox.CodeInterpreter.Models;
using OpenSandbox.Config;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;
using OpenSandbox.Services;

namespace OpenSandbox.Tests.Server
{
    [SetUpFixture]
    public class ServerFixture
    {
        private static Process _server;
        private static string _dataDir;
        public static string Domain;
        public const string ApiKey = "dotnet-test-key";

        [SetUp]
        public void Start()
        {
            var bin = Environment.GetEnvironmentVariable("OPENSANDBOX_SERVER_BIN");
            if (string.IsNullOrEmpty(bin) || !File.Exists(bin)) return;
            // Short: the server puts Unix sockets below it (108-byte limit).
            _dataDir = Path.Combine("/tmp", "osbn-" + Guid.NewGuid().ToString("N").Substring(0, 8));
            Directory.CreateDirectory(_dataDir);
            // bubblewrap, as scripts/with-server.sh: `--runtime auto` picks runc where it
            // works, whose images need a registry the tests do not have.
            var runtime = Environment.GetEnvironmentVariable("WITH_SERVER_RUNTIME");
            if (string.IsNullOrEmpty(runtime)) runtime = "bwrap";
            // Line framing, as scripts/with-server.sh (the kept framing is a conformance case).
            var framing = Environment.GetEnvironmentVariable("WITH_SERVER_FRAMING");
            if (string.IsNullOrEmpty(framing)) framing = "lines";
            // More flags, as scripts/with-server.sh (e.g. "--registry-mirror HOST:PORT" for runc).
            var extra = Environment.GetEnvironmentVariable("WITH_SERVER_ARGS") ?? "";
            var psi = new ProcessStartInfo(bin, "--listen 127.0.0.1:0 --api-key " + ApiKey + " --data-dir " + _dataDir + " --runtime " + runtime + " --output-framing " + framing + " " + extra)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = false,
            };
            _server = Process.Start(psi);
            var deadline = DateTime.UtcNow.AddSeconds(30);
            while (DateTime.UtcNow < deadline)
            {
                var line = _server.StandardOutput.ReadLine();
                if (line == null) break;
                const string prefix = "opensandbox-server listening on ";
                if (line.StartsWith(prefix))
                {
                    Domain = line.Substring(prefix.Length).Trim();
                    break;
                }
            }
            if (Domain == null) throw new Exception("the server did not start");
            // Keep draining its stdout, or the server blocks once the pipe is full.
            var output = _server.StandardOutput;
            new Thread(() => { while (output.ReadLine() != null) { } }) { IsBackground = true }.Start();
            Environment.SetEnvironmentVariable("OPEN_SANDBOX_DOMAIN", Domain);
            Environment.SetEnvironmentVariable("OPEN_SANDBOX_API_KEY", ApiKey);
        }

        [TearDown]
        public void Stop()
        {
            if (_server == null) return;
            try
            {
                using (var m = SandboxManager.Create())
                {
                    var all = m.ListSandboxInfosAsync(new SandboxFilter { PageSize = 200 }).GetAwaiter().GetResult();
                    foreach (var s in all.Items)
                    {
                        try { m.KillSandboxAsync(s.Id).GetAwaiter().GetResult(); }
                        catch (SandboxException) { }
                    }
                }
            }
            finally
            {
                try { _server.Kill(); } catch (InvalidOperationException) { }
                _server.WaitForExit(5000);
                try { Directory.Delete(_dataDir, true); } catch (IOException) { } catch (UnauthorizedAccessException) { }
            }
        }

        public static void Require()
        {
            if (Domain == null) Assert.Ignore("OPENSANDBOX_SERVER_BIN is not set");
        }
    }

    [TestFixture]
    public class SandboxTests
    {
        private Sandbox _sb;
        private readonly List<string> _unknownKeys = new List<string>();

        [TestFixtureSetUp]
        public void CreateSandbox()
        {
            ServerFixture.Require();
            // Every op the tests below send through the op layer is checked against its manifest.
            Bridge.OpTrace = (op, json) => { lock (_unknownKeys) _unknownKeys.AddRange(Manifest.Check(op, json)); };
            _sb = Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.12", Metadata = new Dictionary<string, string> { { "suite", "dotnet" } } }).GetAwaiter().GetResult();
        }

        [TestFixtureTearDown]
        public void KillSandbox()
        {
            Bridge.OpTrace = null;
            if (_sb == null) return;
            _sb.KillAsync().GetAwaiter().GetResult();
            _sb.Dispose();
        }

        [Test]
        public async Task RunFoldsOutputAndExitCode()
        {
            var e = await _sb.Commands.RunAsync("echo out; echo err >&2; exit 3");
            Assert.AreEqual(3, e.ExitCode);
            Assert.AreEqual("out", e.Logs.Stdout.Single().Text);
            Assert.AreEqual("err", e.Logs.Stderr.Single().Text);
            Assert.AreEqual("CommandExecError", e.Error.Name);
            Assert.AreEqual("3", e.Error.Value);
            Assert.IsNotNull(e.Id);
        }

        [Test]
        public async Task OneCallRunEqualsTheStreamedRun()
        {
            // Without handlers RunAsync is one native call (the run op); handlers take the
            // start + batch path. Both give the same Execution.
            const string cmd = "echo one; echo two >&2; echo 'h\u00e9llo'; exit 3";
            Func<Execution, string> shape = x => string.Join("|", new[]
            {
                x.ExitCode.ToString(),
                string.Join(",", x.Logs.Stdout.Select(m => m.Text)),
                string.Join(",", x.Logs.Stderr.Select(m => m.Text)),
                x.Logs.Stdout.All(m => m.Timestamp > 0).ToString(),
                x.Error == null ? "-" : x.Error.Name + ":" + x.Error.Value,
                (x.Id != null).ToString(),
                (x.Complete != null).ToString(),
            });
            var once = await _sb.Commands.RunAsync(cmd);
            var streamed = await _sb.Commands.RunAsync(cmd, null,
                new ExecutionHandlers { OnInit = i => Task.CompletedTask });
            Assert.AreEqual(shape(streamed), shape(once));
            CollectionAssert.AreEqual(new[] { "one", "h\u00e9llo" }, once.Logs.Stdout.Select(m => m.Text).ToArray());
            var bg = await _sb.Commands.RunAsync("sleep 0.2", new RunCommandOptions { Background = true });
            Assert.IsNull(bg.ExitCode);
            Assert.IsNotNull(bg.Id);
        }

        [Test]
        public async Task HandlersAreAwaitedInEventOrder()
        {
            var seen = new List<string>();
            var handlers = new ExecutionHandlers
            {
                OnInit = async i => { await Task.Delay(5); seen.Add("init"); },
                OnStdout = async m => { await Task.Yield(); seen.Add("out:" + m.Text); },
                OnStderr = m => { seen.Add("err:" + m.Text); return Task.CompletedTask; },
                OnExecutionComplete = c => { seen.Add("complete"); return Task.CompletedTask; },
            };
            var e = await _sb.Commands.RunAsync("echo a; sleep 0.2; echo b >&2; sleep 0.2; echo c", null, handlers);
            Assert.AreEqual(0, e.ExitCode);
            CollectionAssert.AreEqual(new[] { "init", "out:a", "err:b", "out:c", "complete" }, seen);
        }

        [Test]
        public async Task RunStreamYieldsRawEvents()
        {
            var types = new List<string>();
            var en = _sb.Commands.RunStreamAsync("printf 'x\\ny\\n'").GetAsyncEnumerator();
            try
            {
                while (await en.MoveNextAsync()) types.Add(en.Current.Type + (en.Current.Type == "stdout" ? ":" + en.Current.Text : ""));
            }
            finally
            {
                await en.DisposeAsync();
            }
            CollectionAssert.AreEqual(new[] { "init", "stdout:x", "stdout:y", "execution_complete" }, types.Where(t => t != "ping").ToList());
        }

        [Test]
        public async Task CancellationReachesTheCoreAndInterruptsTheCommand()
        {
            string id = null;
            var started = new TaskCompletionSource<bool>();
            var cts = new CancellationTokenSource();
            var sw = Stopwatch.StartNew();
            var run = _sb.Commands.RunAsync("echo go; sleep 60", null, new ExecutionHandlers
            {
                OnInit = i => { id = i.Id; return Task.CompletedTask; },
                OnStdout = m => { started.TrySetResult(true); return Task.CompletedTask; },
            }, cts.Token);
            await started.Task;
            cts.Cancel();
            try
            {
                await run;
                Assert.Fail("expected cancellation");
            }
            catch (OperationCanceledException)
            {
            }
            Assert.Less(sw.Elapsed.TotalSeconds, 20);
            // interrupt_on_drop: the command stops on the server too
            CommandStatus status = null;
            for (var i = 0; i < 50; i++)
            {
                status = await _sb.Commands.GetCommandStatusAsync(id);
                if (status.Running == false) break;
                await Task.Delay(100);
            }
            Assert.AreEqual(false, status.Running);
            Assert.AreEqual(0, Bridge.PendingCount);
        }

        [Test]
        public async Task CancellingAOneCallRunInterruptsTheCommand()
        {
            // No handlers: one native call of the run op; cancelling the token drops it,
            // and the command stops on the server as a released run's does.
            const string marker = "/tmp/dotnet-cancel.pid";
            const string probe = "p=$(cat " + marker + " 2>/dev/null) && kill -0 $p";
            var cts = new CancellationTokenSource();
            var run = _sb.Commands.RunAsync("echo $$ > " + marker + "; sleep 60", null, null, cts.Token);
            var alive = false;
            for (var i = 0; i < 50 && !alive; i++)
            {
                alive = (await _sb.Commands.RunAsync(probe)).ExitCode == 0;
                if (!alive) await Task.Delay(100);
            }
            Assert.IsTrue(alive, "the command never started");
            cts.Cancel();
            try
            {
                await run;
                Assert.Fail("expected cancellation");
            }
            catch (OperationCanceledException)
            {
            }
            for (var i = 0; i < 50 && alive; i++)
            {
                alive = (await _sb.Commands.RunAsync(probe)).ExitCode == 0;
                if (alive) await Task.Delay(100);
            }
            Assert.IsFalse(alive, "the command still runs 5 s after the cancellation");
            Assert.AreEqual(0, Bridge.PendingCount);
        }

        [Test]
        public async Task BackgroundCommandStatusAndLogs()
        {
            var e = await _sb.Commands.RunAsync("echo bg-out; sleep 0.2", new RunCommandOptions { Background = true });
            Assert.IsNull(e.ExitCode);
            CommandStatus s = null;
            for (var i = 0; i < 100; i++)
            {
                s = await _sb.Commands.GetCommandStatusAsync(e.Id);
                if (s.Running == false) break;
                await Task.Delay(100);
            }
            Assert.AreEqual(0, s.ExitCode);
            var logs = await _sb.Commands.GetBackgroundCommandLogsAsync(e.Id, 0);
            StringAssert.Contains("bg-out", logs.Content);
            Assert.IsNotNull(logs.Cursor);
        }

        [Test]
        public async Task SessionsKeepState()
        {
            var sid = await _sb.Commands.CreateSessionAsync(new CreateSessionOptions { WorkingDirectory = "/tmp" });
            await _sb.Commands.RunInSessionAsync(sid, "export GREETING=hi");
            var e = await _sb.Commands.RunInSessionAsync(sid, "echo $GREETING; pwd");
            CollectionAssert.AreEqual(new[] { "hi", "/tmp" }, e.Logs.Stdout.Select(m => m.Text).ToList());
            await _sb.Commands.DeleteSessionAsync(sid);
        }

        [Test]
        public async Task SetEnvReachesLaterCommandsAndNewSessions()
        {
            await _sb.Commands.SetEnvAsync("OSB_PLAIN", "hello");
            const string quoted = "it's a \"test\" $(id) `id`";
            await _sb.Commands.SetEnvAsync("OSB_QUOTED", quoted);
            var e = await _sb.Commands.RunAsync("printf '%s|%s' \"$OSB_PLAIN\" \"$OSB_QUOTED\"");
            Assert.AreEqual(0, e.ExitCode);
            Assert.AreEqual("hello|" + quoted, string.Concat(e.Logs.Stdout.Select(m => m.Text)));
            var sid = await _sb.Commands.CreateSessionAsync();
            var s = await _sb.Commands.RunInSessionAsync(sid, "echo \"$OSB_PLAIN\"");
            CollectionAssert.AreEqual(new[] { "hello" }, s.Logs.Stdout.Select(m => m.Text).ToList());
            await _sb.Commands.DeleteSessionAsync(sid);
            foreach (var key in new[] { "", "1A", "A-B", "A B", "A=B" })
                Assert.Throws<InvalidArgumentException>(() => _sb.Commands.SetEnvAsync(key, "v").GetAwaiter().GetResult(), key);
            Assert.Throws<InvalidArgumentException>(() => _sb.Commands.SetEnvAsync("K", "a\0b").GetAwaiter().GetResult());
        }

        [Test]
        public async Task ExecutionOperationsRunOnceAndInventoryPages()
        {
            var inst = await _sb.Commands.GetExecutionInstanceAsync();
            Assert.AreEqual(32, inst.InstanceId.Length);
            Assert.AreEqual(86400, inst.RetentionSeconds);
            var id = inst.NewOperationId();
            var opts = new RunCommandOptions { Background = true };
            var first = await _sb.Commands.CreateCommandOperationAsync(id, "echo ran >> dotnet-keyed.txt", opts);
            Assert.AreEqual("command", first.Kind);
            Assert.AreEqual("created", first.State);
            Assert.AreNotEqual(default(DateTimeOffset), first.ExpiresAt);
            var again = await _sb.Commands.CreateCommandOperationAsync(id, "echo ran >> dotnet-keyed.txt", opts);
            Assert.AreEqual(first.Id, again.Id);
            var conflict = Assert.Throws<SandboxApiException>(() => _sb.Commands.CreateCommandOperationAsync(id, "echo other", opts).GetAwaiter().GetResult());
            Assert.AreEqual(409, conflict.StatusCode);
            Assert.AreEqual(first.Id, (await _sb.Commands.GetExecutionOperationAsync("command", id)).Id);
            var pty = await _sb.Commands.CreatePtyOperationAsync(inst.NewOperationId());
            Assert.AreEqual("pty", pty.Kind);
            await Task.Delay(500);
            var cat = await _sb.Commands.RunAsync("cat dotnet-keyed.txt");
            Assert.AreEqual(1, cat.Logs.Stdout.Count);

            var page = await _sb.CommandInventory.ListCommandsAsync(limit: 1);
            Assert.AreEqual(1, page.Commands.Count);
            Assert.AreEqual(cat.Id, page.Commands[0].Session);
            Assert.IsInstanceOf<TerminalCommandSummary>(page.Commands[0]);
            Assert.IsNotNull(page.Pagination.NextCursor);
            var next = await _sb.CommandInventory.ListCommandsAsync(null, 1, page.Pagination.NextCursor);
            Assert.AreEqual(first.Id, next.Commands[0].Session);
            Assert.Throws<InvalidArgumentException>(() => _sb.CommandInventory.ListCommandsAsync(limit: 101).GetAwaiter().GetResult());
        }

        [Test]
        public async Task FilesWriteReadStreamAndInfo()
        {
            var payload = new byte[3 * 1024 * 1024 + 17];
            new Random(7).NextBytes(payload);
            await _sb.Files.WriteFilesAsync(new[]
            {
                new WriteEntry { Path = "/tmp/dotnet/a.txt", Data = "line1\nline2\nline3\n", Mode = 644 },
                new WriteEntry { Path = "/tmp/dotnet/b.bin", Data = new MemoryStream(payload) },
            });
            Assert.AreEqual("line2", await _sb.Files.ReadFileAsync("/tmp/dotnet/a.txt", new ReadFileOptions { Offset = 2, Limit = 1 }));
            Assert.AreEqual("line1", await _sb.Files.ReadFileAsync("/tmp/dotnet/a.txt", new ReadFileOptions { Range = "bytes=0-4" }));
            var all = new MemoryStream();
            var en = _sb.Files.ReadBytesStreamAsync("/tmp/dotnet/b.bin").GetAsyncEnumerator();
            try
            {
                while (await en.MoveNextAsync()) all.Write(en.Current, 0, en.Current.Length);
            }
            finally
            {
                await en.DisposeAsync();
            }
            CollectionAssert.AreEqual(payload, all.ToArray());
            var info = await _sb.Files.GetFileInfoAsync(new[] { "/tmp/dotnet/a.txt" });
            Assert.AreEqual(644, info["/tmp/dotnet/a.txt"].Mode);
            Assert.AreEqual(18, info["/tmp/dotnet/a.txt"].Size);
            var found = await _sb.Files.SearchAsync(new SearchEntry { Path = "/tmp/dotnet", Pattern = "*.txt" });
            Assert.AreEqual(1, found.Count);
            var replaced = await _sb.Files.ReplaceContentsDetailedAsync(new[] { new ContentReplaceEntry { Path = "/tmp/dotnet/a.txt", OldContent = "line", NewContent = "row" } });
            Assert.AreEqual(3, replaced.Single().ReplacedCount);
            await _sb.Files.DeleteDirectoriesAsync(new[] { "/tmp/dotnet" });
        }

        private sealed class FlippingFileStream : FileStream
        {
            public FlippingFileStream(string path) : base(path, FileMode.Open, FileAccess.Read) { }

            public override int Read(byte[] array, int offset, int count)
            {
                var n = base.Read(array, offset, count);
                for (var i = 0; i < n; i++) array[offset + i] = (byte)~array[offset + i];
                return n;
            }

            public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken ct)
            {
                return Task.FromResult(Read(buffer, offset, count));
            }
        }

        private sealed class LongerThanItIsStream : MemoryStream
        {
            public LongerThanItIsStream(byte[] b) : base(b) { }
            public override long Length { get { return base.Length + 10; } }
        }

        private async Task<byte[]> ReadAllAsync(string path, ReadBytesOptions options = null)
        {
            var all = new MemoryStream();
            var en = _sb.Files.ReadBytesStreamAsync(path, options).GetAsyncEnumerator();
            try
            {
                while (await en.MoveNextAsync()) all.Write(en.Current, 0, en.Current.Length);
            }
            finally
            {
                await en.DisposeAsync();
            }
            return all.ToArray();
        }

        [Test]
        public async Task DownloadsReadOnADriverEndCancelAndDisposeCleanly()
        {
            // Downloads open with a blocking download.open and read with
            // osb_session_download_read on pool threads (SandboxServices.cs DownloadEnumerable).
            var payload = new byte[10 * 1024 * 1024 + 12345];
            new Random(13).NextBytes(payload);
            await _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-dl/big.bin", Data = new MemoryStream(payload) } });

            // Read to the end: every byte, in chunks of at most ChunkSize cut from a first batch
            // of FirstBatch bytes and then batches of BatchSize, the last one shorter.
            var all = new MemoryStream();
            var sizes = new List<int>();
            var en = _sb.Files.ReadBytesStreamAsync("/tmp/dotnet-dl/big.bin").GetAsyncEnumerator();
            try
            {
                while (await en.MoveNextAsync())
                {
                    sizes.Add(en.Current.Length);
                    all.Write(en.Current, 0, en.Current.Length);
                }
                Assert.IsFalse(await en.MoveNextAsync());
            }
            finally
            {
                await en.DisposeAsync();
            }
            CollectionAssert.AreEqual(payload, all.ToArray());
            var expected = new List<int>();
            var left = payload.Length;
            for (var batch = DownloadEnumerable.FirstBatch; left > 0; batch = DownloadEnumerable.BatchSize)
            {
                var inBatch = Math.Min(batch, left);
                left -= inBatch;
                for (; inBatch > 0; inBatch -= DownloadEnumerable.ChunkSize) expected.Add(Math.Min(inBatch, DownloadEnumerable.ChunkSize));
            }
            CollectionAssert.AreEqual(expected.ToArray(), sizes.ToArray());
            // Mono's nursery takes objects of up to 8000 bytes (the array's header is 32).
            if (Type.GetType("Mono.Runtime") != null) Assert.LessOrEqual(DownloadEnumerable.ChunkSize + 32, 8000);

            // A range of it, and an empty file: no chunk at all.
            CollectionAssert.AreEqual(payload.Skip(1000).Take(3000000).ToArray(),
                await ReadAllAsync("/tmp/dotnet-dl/big.bin", new ReadBytesOptions { Range = "bytes=1000-3000999" }));
            await _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-dl/empty.bin", Data = new MemoryStream(new byte[0]) } });
            Assert.AreEqual(0, (await ReadAllAsync("/tmp/dotnet-dl/empty.bin")).Length);

            // Cancelled mid-download (after the first chunk): OperationCanceledException, and
            // the enumerator is then over.
            using (var cts = new CancellationTokenSource())
            {
                var c = _sb.Files.ReadBytesStreamAsync("/tmp/dotnet-dl/big.bin", null, cts.Token).GetAsyncEnumerator();
                try
                {
                    Assert.IsTrue(await c.MoveNextAsync());
                    cts.Cancel();
                    Assert.Catch<OperationCanceledException>(() => c.MoveNextAsync().AsTask().GetAwaiter().GetResult());
                    Assert.IsFalse(await c.MoveNextAsync());
                }
                finally
                {
                    await c.DisposeAsync();
                }
            }

            // Cancelled while a MoveNextAsync is in flight (the open or a read, whichever the
            // token meets): it either completes or ends cancelled; the next one is cancelled.
            for (var i = 0; i < 5; i++)
            {
                using (var cts = new CancellationTokenSource())
                {
                    var c = _sb.Files.ReadBytesStreamAsync("/tmp/dotnet-dl/big.bin", null, cts.Token).GetAsyncEnumerator();
                    try
                    {
                        if (i > 0) Assert.IsTrue(await c.MoveNextAsync());
                        var pending = c.MoveNextAsync().AsTask();
                        cts.Cancel();
                        try
                        {
                            Assert.IsTrue(await pending);
                            Assert.Catch<OperationCanceledException>(() => c.MoveNextAsync().AsTask().GetAwaiter().GetResult());
                        }
                        catch (OperationCanceledException)
                        {
                            Assert.IsFalse(await c.MoveNextAsync());
                        }
                    }
                    finally
                    {
                        await c.DisposeAsync();
                    }
                }
            }

            // A token cancelled before the first MoveNextAsync: nothing is opened.
            using (var cts = new CancellationTokenSource())
            {
                cts.Cancel();
                var c = _sb.Files.ReadBytesStreamAsync("/tmp/dotnet-dl/big.bin", null, cts.Token).GetAsyncEnumerator();
                Assert.Catch<OperationCanceledException>(() => c.MoveNextAsync().AsTask().GetAwaiter().GetResult());
                await c.DisposeAsync();
            }

            // Disposed mid-download (the handle is released, its connection closed), several
            // times over: later downloads on the same sandbox still read the whole file.
            for (var i = 0; i < 3; i++)
            {
                var d = _sb.Files.ReadBytesStreamAsync("/tmp/dotnet-dl/big.bin").GetAsyncEnumerator();
                Assert.IsTrue(await d.MoveNextAsync());
                Assert.AreEqual(DownloadEnumerable.ChunkSize, d.Current.Length);
                // i = 1, 2: a batch has been read ahead (in flight or done) when the
                // enumerator is disposed.
                for (var j = 0; j < i * 200; j++) Assert.IsTrue(await d.MoveNextAsync());
                await d.DisposeAsync();
                Assert.IsFalse(await d.MoveNextAsync());
            }
            CollectionAssert.AreEqual(payload, await ReadAllAsync("/tmp/dotnet-dl/big.bin"));
            await _sb.Files.DeleteDirectoriesAsync(new[] { "/tmp/dotnet-dl" });
        }

        [Test]
        public async Task FileStreamUploadsTheRestOfItsFileAndEndsAtTheEnd()
        {
            // The descriptor path (the library reads the file): from the stream's position,
            // which ends where reading the stream whole leaves it.
            var payload = new byte[3 * 1024 * 1024 + 5];
            new Random(11).NextBytes(payload);
            var f = Path.GetTempFileName();
            try
            {
                File.WriteAllBytes(f, payload);
                using (var fs = File.OpenRead(f))
                {
                    Assert.AreEqual(1000, fs.Read(new byte[1000], 0, 1000));
                    await _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-fd.bin", Data = fs } });
                    Assert.AreEqual(payload.Length, fs.Position);
                    Assert.AreEqual(0, fs.Read(new byte[1], 0, 1));
                }
                CollectionAssert.AreEqual(payload.Skip(1000).ToArray(), await ReadAllAsync("/tmp/dotnet-fd.bin"));

                // A subclass may read other bytes than the file's: streamed through its reads.
                using (var fs = new FlippingFileStream(f))
                    await _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-sub.bin", Data = fs } });
                CollectionAssert.AreEqual(payload.Select(b => (byte)~b).ToArray(), await ReadAllAsync("/tmp/dotnet-sub.bin"));

                // A failed upload (the parent is a file) leaves the position where it was.
                using (var fs = File.OpenRead(f))
                {
                    fs.Position = 10;
                    Assert.Catch<SandboxException>(() => _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-fd.bin/child", Data = fs } }).GetAwaiter().GetResult());
                    Assert.AreEqual(10, fs.Position);
                }

                // Cancelled: an OperationCanceledException, the position unchanged.
                using (var fs = File.OpenRead(f))
                using (var cts = new CancellationTokenSource())
                {
                    cts.Cancel();
                    Assert.Catch<OperationCanceledException>(() => _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-cancel.bin", Data = fs } }, cts.Token).GetAwaiter().GetResult());
                    Assert.AreEqual(0, fs.Position);
                }
            }
            finally
            {
                File.Delete(f);
            }

            // A stream that reads fewer bytes than its Length said: refused, no short file stored.
            var ex = Assert.Throws<InvalidArgumentException>(() => _sb.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/dotnet-short.bin", Data = new LongerThanItIsStream(new byte[100]) } }).GetAwaiter().GetResult());
            StringAssert.Contains("declared", ex.Message);
        }

        [Test]
        public async Task MissingFileIsNotFoundWithRequestId()
        {
            try
            {
                await _sb.Files.ReadFileAsync("/tmp/definitely-missing");
                Assert.Fail("expected SandboxApiException");
            }
            catch (SandboxApiException e)
            {
                Assert.AreEqual(404, e.StatusCode);
                Assert.AreEqual("not_found", e.Kind);
                Assert.IsNotNullOrEmpty(e.RequestId);
            }
        }

        [Test]
        public async Task InfoEndpointMetricsAndHealth()
        {
            var info = await _sb.GetInfoAsync();
            Assert.AreEqual(_sb.Id, info.Id);
            Assert.AreEqual(SandboxStates.Running, info.Status.State);
            Assert.AreEqual("dotnet", info.Metadata["suite"]);
            Assert.IsTrue(await _sb.IsHealthyAsync());
            var ep = await _sb.GetEndpointAsync(Constants.DefaultExecdPort);
            StringAssert.DoesNotStartWith("http", ep.EndpointAddress);
            StringAssert.StartsWith("http://", await _sb.GetEndpointUrlAsync(Constants.DefaultExecdPort));
            var m = await _sb.GetMetricsAsync();
            Assert.Greater(m.CpuCount, 0);
            Assert.Greater(m.MemoryTotalMiB, 0);
        }

        [Test]
        public async Task CodeInterpreterKeepsContextState()
        {
            var ci = await CodeInterpreter.CodeInterpreter.CreateAsync(_sb);
            var ctx = await ci.Codes.CreateContextAsync(SupportedLanguage.Python);
            await ci.Codes.RunAsync("x = 40", new RunCodeOptions { Context = ctx });
            var e = await ci.Codes.RunAsync("x + 2", new RunCodeOptions { Context = ctx });
            Assert.AreEqual("42", e.Results.Single().Text);
            Assert.IsNull(e.ExitCode);
            await ci.Codes.DeleteContextAsync(ctx.Id);
        }

        [Test]
        public async Task SkipAccumulationKeepsCodeResults()
        {
            // The core's rule, the same in every language: skip_accumulation drops the kept
            // stdout/stderr, never the results (C# used to drop them).
            var ci = await CodeInterpreter.CodeInterpreter.CreateAsync(_sb);
            var lines = new List<string>();
            var e = await ci.Codes.RunAsync("print('a')\n1 + 1", new RunCodeOptions
            {
                Handlers = new ExecutionHandlers { SkipAccumulation = true, OnStdout = m => { lines.Add(m.Text.TrimEnd()); return Task.CompletedTask; } },
            });
            Assert.AreEqual("2", e.Results.Single().Text);
            Assert.AreEqual(0, e.Logs.Stdout.Count);
            CollectionAssert.AreEqual(new[] { "a" }, lines);
        }

        [Test]
        public void ZzEveryOpSentIsInTheManifest()
        {
            // Runs last (alphabetical order in NUnit 2.6): the ops of the tests above.
            lock (_unknownKeys) CollectionAssert.IsEmpty(_unknownKeys);
        }

        [Test]
        public async Task ManyCallbacksSurviveGarbageCollection()
        {
            // The native callbacks are static delegates: collections between calls must not matter.
            var tasks = new List<Task<bool>>();
            for (var i = 0; i < 50; i++)
            {
                tasks.Add(_sb.IsHealthyAsync());
                if (i % 10 == 0)
                {
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                }
            }
            var results = await Task.WhenAll(tasks);
            Assert.IsTrue(results.All(r => r));
            Assert.AreEqual(0, Bridge.PendingCount);
        }
    }

    [TestFixture]
    public class ManagerTests
    {
        [Test]
        public async Task ListPatchAndKill()
        {
            ServerFixture.Require();
            var tag = Guid.NewGuid().ToString("N");
            var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.12", ManualCleanup = true, Metadata = new Dictionary<string, string> { { "tag", tag } } });
            try
            {
                Assert.IsNull((await sb.GetInfoAsync()).ExpiresAt);
                using (var m = SandboxManager.Create())
                {
                    var list = await m.ListSandboxInfosAsync(new SandboxFilter { Metadata = new Dictionary<string, string> { { "tag", tag } } });
                    Assert.AreEqual(sb.Id, list.Items.Single().Id);
                    var info = await m.PatchSandboxMetadataAsync(sb.Id, new Dictionary<string, string> { { "extra", "1" } });
                    Assert.AreEqual("1", info.Metadata["extra"]);
                    await m.KillSandboxAsync(sb.Id);
                    try
                    {
                        await m.GetSandboxInfoAsync(sb.Id);
                        Assert.Fail("expected 404");
                    }
                    catch (SandboxApiException e)
                    {
                        Assert.AreEqual(404, e.StatusCode);
                    }
                }
            }
            finally
            {
                sb.Dispose();
            }
        }

        [Test]
        public async Task CachedEndpointsStillWorkAfterPauseAndResume()
        {
            ServerFixture.Require();
            var cfg = new ConnectionConfig(new ConnectionConfigOptions { EndpointCacheTtlSeconds = 600, EndpointCacheSize = 16 });
            var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { ConnectionConfig = cfg, Image = "python:3.12", Metadata = new Dictionary<string, string> { { "suite", "dotnet" } } });
            Sandbox resumed = null;
            try
            {
                Assert.IsNotNull((await sb.GetEndpointAsync(44772)).EndpointAddress);
                Assert.AreEqual(0, (await sb.Commands.RunAsync("echo before")).ExitCode);
                await sb.PauseAsync();
                resumed = await sb.ResumeAsync();
                var e = await resumed.Commands.RunAsync("echo after");
                Assert.AreEqual("after", e.Logs.Stdout.Single().Text);
            }
            finally
            {
                await sb.KillAsync();
                sb.Dispose();
                if (resumed != null) resumed.Dispose();
            }
        }

        [Test]
        public async Task WrongApiKeyIsUnauthorized()
        {
            ServerFixture.Require();
            var cfg = new ConnectionConfig(new ConnectionConfigOptions { ApiKey = "wrong" });
            using (var m = SandboxManager.Create(new SandboxManagerOptions { ConnectionConfig = cfg }))
            {
                try
                {
                    await m.ListSandboxInfosAsync();
                    Assert.Fail("expected 401");
                }
                catch (SandboxApiException e)
                {
                    Assert.AreEqual(401, e.StatusCode);
                    Assert.AreEqual("unauthorized", e.Kind);
                }
            }
        }

        [Test]
        public async Task CustomHealthCheckTimeoutKillsTheSandbox()
        {
            ServerFixture.Require();
            var tag = Guid.NewGuid().ToString("N");
            try
            {
                await Sandbox.CreateAsync(new SandboxCreateOptions
                {
                    Image = "python:3.12",
                    Metadata = new Dictionary<string, string> { { "tag", tag } },
                    HealthCheck = s => Task.FromResult(false),
                    ReadyTimeoutSeconds = 1,
                    HealthCheckPollingInterval = 100,
                });
                Assert.Fail("expected SandboxReadyTimeoutException");
            }
            catch (SandboxReadyTimeoutException e)
            {
                StringAssert.Contains(ServerFixture.Domain, e.Message);
            }
            using (var m = SandboxManager.Create())
            {
                var list = await m.ListSandboxInfosAsync(new SandboxFilter { Metadata = new Dictionary<string, string> { { "tag", tag } }, States = new[] { SandboxStates.Running } });
                Assert.AreEqual(0, list.Items.Count, "the zombie sandbox was not cleaned up");
            }
        }
    }
}
