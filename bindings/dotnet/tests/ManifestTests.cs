// Every op and argument key the package sends to the op layer (bindings/common) must be in
// its manifest (osb_ops_manifest), so that a misspelt key fails here, not for a user.

using System.Collections.Generic;
using NUnit.Framework;
using OpenSandbox.Config;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;

namespace OpenSandbox.Tests
{
    internal static class Manifest
    {
        private static Dictionary<string, HashSet<string>> _ops;

        public static Dictionary<string, HashSet<string>> Ops
        {
            get
            {
                if (_ops != null) return _ops;
                var ops = new Dictionary<string, HashSet<string>>();
                foreach (var op in Json.Arr(Json.Get(Json.Parse(Bridge.OpsManifest()), "ops")))
                {
                    var keys = new HashSet<string>();
                    foreach (var a in Json.Arr(Json.Get(op, "args"))) keys.Add(Json.Str(a, "name"));
                    ops[Json.Str(op, "name")] = keys;
                }
                return _ops = ops;
            }
        }

        /// <summary>The problems of one op call (its JSON arguments) against the manifest.</summary>
        public static List<string> Check(string op, string argsJson)
        {
            var bad = new List<string>();
            HashSet<string> keys;
            if (!Ops.TryGetValue(op, out keys))
            {
                bad.Add("op " + op + " is not in the manifest");
                return bad;
            }
            var args = Json.Obj(Json.Parse(argsJson ?? "{}")) ?? new Dictionary<string, object>();
            foreach (var kv in args)
            {
                if (!keys.Contains(kv.Key)) bad.Add(op + ": key " + kv.Key + " is not in the manifest");
                var conn = kv.Key == "connection" ? Json.Obj(kv.Value) : null;
                if (conn != null)
                    foreach (var ck in conn.Keys)
                        if (!Ops["config.new"].Contains(ck)) bad.Add(op + ": connection key " + ck + " is not in the manifest");
            }
            return bad;
        }
    }

    [TestFixture]
    public class ManifestTests
    {
        private static void AssertKnown(string op, Dictionary<string, object> args)
        {
            CollectionAssert.IsEmpty(Manifest.Check(op, Json.Write(args)));
        }

        [Test]
        public void EveryOpAndKeyThePackageSendsIsInTheManifest()
        {
            var cfg = new ConnectionConfig(new ConnectionConfigOptions
            {
                Domain = "h:1", ApiKey = "k", UseServerProxy = true,
                Headers = new Dictionary<string, string> { { "X", "1" } },
            });
            AssertKnown("sandbox.connect", new Dictionary<string, object> { { "sandbox_id", "x" }, { "connection", cfg.ToSessionConnection() }, { "skip_health_check", true } });
            var run = CommandsService.RunArgs("c", new RunCommandOptions
            {
                WorkingDirectory = "/", Background = true, TimeoutSeconds = 1, Uid = 1, Gid = 2,
                Envs = new Dictionary<string, string> { { "A", "b" } },
            });
            AssertKnown("commands.start", WithRun(run));
            AssertKnown("commands.start_in_session", WithRun(CommandsService.SessionArgs("s", "c", new RunInSessionOptions { WorkingDirectory = "/", TimeoutSeconds = 1 })));
            AssertKnown("code.start", WithRun(Args.Of("code", "1", "context_id", "c", "language", "python")));
            AssertKnown("execution.next_batch", new Dictionary<string, object> { { "handle", 1L } });
            AssertKnown("release", new Dictionary<string, object> { { "handle", 1L } });
        }

        [Test]
        public void AMisspeltKeyIsCaught()
        {
            CollectionAssert.IsNotEmpty(Manifest.Check("commands.start", "{\"comand\":\"x\",\"sandbox\":1}"));
            CollectionAssert.IsNotEmpty(Manifest.Check("commands.explode", "{}"));
        }

        private static Dictionary<string, object> WithRun(Dictionary<string, object> a)
        {
            a["sandbox"] = 1L;
            a["handlers"] = true;
            a["skip_accumulation"] = true;
            return a;
        }
    }
}
