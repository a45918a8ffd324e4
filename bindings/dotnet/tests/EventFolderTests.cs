// The outcome of a run is the core's (folded by bindings/common and read from the run's
// last item); these tests check how it is read and how batch events reach the handlers.

using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;

namespace OpenSandbox.Tests
{
    [TestFixture]
    public class EventFolderTests
    {
        private static Execution Outcome(string json) { return EventFolder.Outcome(Json.Parse(json), CancellationToken.None); }

        [Test]
        public void CompleteOutcomeIsReadAsIs()
        {
            var e = Outcome("{\"type\":\"end\",\"ok\":true,\"execution\":{\"id\":\"exec-1\",\"exit_code\":0,\"stdout\":[\"hi\"],\"stdout_timestamps\":[5],"
                + "\"stderr\":[],\"stderr_timestamps\":[],\"results\":[],\"error\":null,\"complete\":{\"execution_time_ms\":12,\"timestamp\":6},\"execution_count\":null}}");
            Assert.AreEqual("exec-1", e.Id);
            Assert.AreEqual(0, e.ExitCode);
            Assert.AreEqual(12, e.Complete.ExecutionTimeMs);
            Assert.AreEqual("hi", e.Logs.Stdout[0].Text);
            Assert.AreEqual(5, e.Logs.Stdout[0].Timestamp);
        }

        [Test]
        public void ErrorOutcomeKeepsTheCoresExitCode()
        {
            var e = Outcome("{\"type\":\"end\",\"ok\":true,\"execution\":{\"id\":\"x\",\"exit_code\":7,\"stdout\":[],\"stderr\":[],\"results\":[],"
                + "\"error\":{\"name\":\"CommandExecError\",\"value\":\"7\",\"traceback\":[\"t\"],\"timestamp\":1},\"complete\":null,\"execution_count\":null}}");
            Assert.AreEqual(7, e.ExitCode);
            Assert.AreEqual("CommandExecError", e.Error.Name);
            CollectionAssert.AreEqual(new[] { "t" }, e.Error.Traceback);
        }

        [Test]
        public void CodeOutcomeHasResultsAndNoExitCode()
        {
            var e = Outcome("{\"type\":\"end\",\"ok\":true,\"execution\":{\"id\":\"x\",\"exit_code\":null,\"stdout\":[],\"stderr\":[],"
                + "\"results\":[{\"text\":\"2\",\"timestamp\":1,\"raw\":{\"text/plain\":\"2\"}}],\"error\":null,\"complete\":{\"execution_time_ms\":1,\"timestamp\":2},\"execution_count\":3}}");
            Assert.IsNull(e.ExitCode);
            Assert.AreEqual("2", e.Results[0].Text);
            Assert.AreEqual(3, e.ExecutionCount);
        }

        [Test]
        public void FailedOutcomeIsTheOfficialException()
        {
            var ex = Assert.Throws<SandboxApiException>(() => Outcome(
                "{\"type\":\"end\",\"ok\":false,\"error\":{\"kind\":\"api\",\"status\":500,\"code\":\"X\",\"message\":\"boom\",\"request_id\":\"r\",\"operation\":\"commands.run\"}}"));
            StringAssert.Contains("boom", ex.Message);
            Assert.AreEqual("api", ex.Kind);
        }

        [Test]
        public async Task EventsReachOnEventThenTheTypedHandler()
        {
            var seen = new List<string>();
            var h = new ExecutionHandlers
            {
                SkipAccumulation = true,
                OnStdout = m => { seen.Add(m.Text); return Task.CompletedTask; },
                OnResult = r => { seen.Add("result:" + r.Text); return Task.CompletedTask; },
                OnEvent = e => { seen.Add("event:" + ((ServerStreamEvent)e).Type); return Task.CompletedTask; },
            };
            await EventFolder.DeliverAsync(Json.Parse("{\"type\":\"stdout\",\"text\":\"a\",\"timestamp\":1}"), h);
            await EventFolder.DeliverAsync(Json.Parse("{\"type\":\"result\",\"text\":\"2\",\"timestamp\":2,\"raw\":{\"text/plain\":\"2\"}}"), h);
            CollectionAssert.AreEqual(new[] { "event:stdout", "a", "event:result", "result:2" }, seen);
        }
    }
}
