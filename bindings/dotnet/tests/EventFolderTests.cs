// The execution folding rules (reference-sdk-api.md §0), checked on hand-made events.

using System.Collections.Generic;
using System.Threading.Tasks;
using NUnit.Framework;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;

namespace OpenSandbox.Tests
{
    [TestFixture]
    public class EventFolderTests
    {
        private static NativeEvent Text(int type, string text) { return new NativeEvent { Type = type, Text = text, Timestamp = 1 }; }
        private static NativeEvent JsonEvent(int type, string json) { return new NativeEvent { Type = type, Json = Json.Parse(json), Timestamp = 2 }; }

        [Test]
        public async Task CompleteGivesExitCodeZero()
        {
            var f = new EventFolder(null, true);
            await f.ApplyAsync(Text(NativeMethods.OSB_EVENT_INIT, "exec-1"));
            await f.ApplyAsync(Text(NativeMethods.OSB_EVENT_STDOUT, "hi"));
            await f.ApplyAsync(JsonEvent(NativeMethods.OSB_EVENT_EXECUTION_COMPLETE, "{\"execution_time_ms\": 12}"));
            Assert.AreEqual("exec-1", f.Execution.Id);
            Assert.AreEqual(0, f.Execution.ExitCode);
            Assert.AreEqual(12, f.Execution.Complete.ExecutionTimeMs);
            Assert.AreEqual("hi", f.Execution.Logs.Stdout[0].Text);
        }

        [Test]
        public async Task ErrorValueIsTheExitCode()
        {
            var f = new EventFolder(null, true);
            await f.ApplyAsync(JsonEvent(NativeMethods.OSB_EVENT_ERROR, "{\"name\": \"CommandExecError\", \"value\": \"7\", \"traceback\": [\"t\"]}"));
            Assert.AreEqual(7, f.Execution.ExitCode);
            Assert.AreEqual("CommandExecError", f.Execution.Error.Name);
            CollectionAssert.AreEqual(new[] { "t" }, f.Execution.Error.Traceback);
        }

        [Test]
        public async Task CodeRunsNeverSetAnExitCode()
        {
            var f = new EventFolder(null, false);
            await f.ApplyAsync(JsonEvent(NativeMethods.OSB_EVENT_RESULT, "{\"text\": \"2\", \"raw\": {\"text/plain\": \"2\"}}"));
            await f.ApplyAsync(JsonEvent(NativeMethods.OSB_EVENT_ERROR, "{\"name\": \"NameError\", \"value\": \"x\"}"));
            await f.ApplyAsync(JsonEvent(NativeMethods.OSB_EVENT_EXECUTION_COMPLETE, "{\"execution_time_ms\": 1}"));
            Assert.IsNull(f.Execution.ExitCode);
            Assert.AreEqual("2", f.Execution.Results[0].Text);
            Assert.IsNotNull(f.Execution.Complete);
        }

        [Test]
        public async Task SkipAccumulationStillCallsHandlers()
        {
            var seen = new List<string>();
            var h = new ExecutionHandlers
            {
                SkipAccumulation = true,
                OnStdout = m => { seen.Add(m.Text); return Task.CompletedTask; },
                OnEvent = e => { seen.Add("event:" + ((ServerStreamEvent)e).Type); return Task.CompletedTask; },
            };
            var f = new EventFolder(h, true);
            await f.ApplyAsync(Text(NativeMethods.OSB_EVENT_STDOUT, "a"));
            CollectionAssert.AreEqual(new[] { "event:stdout", "a" }, seen);
            Assert.AreEqual(0, f.Execution.Logs.Stdout.Count);
        }
    }
}
