// (1.1) areas: templates, create from template, lifecycle hooks, resource requests, volumes,
// the credential vault, isolated sessions and identity-scoped files. Argument checks need no
// server; the rest runs against the reference server of ServerFixture.

using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using OpenSandbox;
using OpenSandbox.Config;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;
using OpenSandbox.Services;
using OpenSandbox.Tests.Server;

namespace OpenSandbox.Tests
{
    [TestFixture]
    public class Areas11ArgumentTests
    {
        // Nothing listens on port 1: a request fails at once, after OpTrace saw its arguments.
        private static readonly ConnectionConfig Nowhere = new ConnectionConfig(new ConnectionConfigOptions { Domain = "127.0.0.1:1", ApiKey = "k", RequestTimeoutSeconds = 2 });

        private static string Traced(string wantOp, Func<Task> call)
        {
            string seen = null;
            var unknown = new List<string>();
            Bridge.OpTrace = (op, json) =>
            {
                if (op != wantOp) return;
                seen = json;
                unknown.AddRange(Manifest.Check(op, json));
            };
            try
            {
                try { call().GetAwaiter().GetResult(); }
                catch (SandboxException) { /* connection refused: expected */ }
            }
            finally
            {
                Bridge.OpTrace = null;
            }
            Assert.IsNotNull(seen, wantOp + " was not sent");
            CollectionAssert.IsEmpty(unknown);
            return seen;
        }

        [Test]
        public void CreateSendsLifecycleResourceRequestsVolumesAndCredentialProxy()
        {
            var json = Traced("sandbox.create", () => Sandbox.CreateAsync(new SandboxCreateOptions
            {
                ConnectionConfig = Nowhere,
                Image = "python:3.11",
                ResourceRequests = new Dictionary<string, string> { { "cpu", "250m" } },
                CredentialProxy = new CredentialProxyConfig { Enabled = true },
                Lifecycle = new SandboxLifecycle
                {
                    PreStart = new LifecycleHook { Command = new[] { "sh", "-c", "true" }, TimeoutSeconds = 30 },
                    Periodic = new[] { new PeriodicLifecycleHook { Name = "tick", Schedule = "@every 1s", Command = new[] { "true" } } },
                },
                Volumes = new[]
                {
                    new Volume { Name = "data", MountPath = "/data", Pvc = new PVC { ClaimName = "c", CreateIfNotExists = true, AccessModes = new[] { "ReadWriteOnce" } } },
                    new Volume { Name = "oss", MountPath = "/oss", Ossfs = new OSSFS { Bucket = "b", Endpoint = "e", AccessKeyId = "i", AccessKeySecret = "s" } },
                },
            }));
            var o = Json.Parse(json);
            Assert.AreEqual("250m", Json.Str(Json.Get(o, "resource_requests"), "cpu"));
            Assert.AreEqual(true, Json.Bool(Json.Get(o, "credential_proxy"), "enabled"));
            var lc = Json.Get(o, "lifecycle");
            Assert.AreEqual(30L, Json.Long(Json.Get(lc, "pre_start"), "timeout_seconds"));
            Assert.AreEqual("@every 1s", Json.Str(Json.Arr(Json.Get(lc, "periodic"))[0], "schedule"));
            var vols = Json.Arr(Json.Get(o, "volumes"));
            Assert.AreEqual(true, Json.Bool(Json.Get(vols[0], "pvc"), "create_if_not_exists"));
            CollectionAssert.AreEqual(new[] { "ReadWriteOnce" }, Json.StrList(Json.Get(vols[0], "pvc"), "access_modes"));
            Assert.AreEqual("2.0", Json.Str(Json.Get(vols[1], "ossfs"), "version"));
        }

        [Test]
        public void CreateFromTemplateSendsOnlyTheTemplateFields()
        {
            var json = Traced("sandbox.create", () => Sandbox.CreateFromTemplateAsync(new SandboxCreateFromTemplateOptions
            {
                ConnectionConfig = Nowhere,
                TemplateId = "tpl_x",
                TimeoutSeconds = 60,
                Metadata = new Dictionary<string, string> { { "k", "v" } },
            }));
            var o = Json.Obj(Json.Parse(json));
            Assert.AreEqual("tpl_x", o["template_id"]);
            Assert.AreEqual(60L, o["timeout_s"]);
            Assert.IsFalse(o.ContainsKey("image"));
        }

        [Test]
        public void TemplateRequestsAreValidatedBeforeAnyCall()
        {
            Assert.Throws<InvalidArgumentException>(() => Sandbox.CreateFromTemplateAsync(new SandboxCreateFromTemplateOptions { TimeoutSeconds = 60 }).GetAwaiter().GetResult());
            Assert.Throws<InvalidArgumentException>(() => Sandbox.CreateFromTemplateAsync(new SandboxCreateFromTemplateOptions { TemplateId = "tpl_x" }).GetAwaiter().GetResult());
            using (var m = SandboxManager.Create(new SandboxManagerOptions { ConnectionConfig = Nowhere }))
            {
                Assert.Throws<InvalidArgumentException>(() => m.CreateTemplateAsync(new CreateTemplateRequest { Image = "python:3.11" }).GetAwaiter().GetResult());
                Assert.Throws<InvalidArgumentException>(() => m.ListTemplatesAsync(new TemplateFilter { PageSize = 201 }).GetAwaiter().GetResult());
                Assert.Throws<InvalidArgumentException>(() => m.GetTemplateAsync("").GetAwaiter().GetResult());
                var json = Traced("manager.create_template", () => m.CreateTemplateAsync(new CreateTemplateRequest
                {
                    Image = "python:3.11",
                    Publish = "s3://b/p",
                    Env = new Dictionary<string, string> { { "A", "1" } },
                    Readiness = new TemplateReadiness { Probe = "cmd://true", WarmupSeconds = 5 },
                }));
                Assert.AreEqual(5L, Json.Long(Json.Get(Json.Parse(json), "readiness"), "warmup_seconds"));
            }
        }

        [Test]
        public void BadVolumesHooksAndSnapshotEntrypointAreInvalidArguments()
        {
            Func<SandboxCreateOptions, Task> create = o => { o.ConnectionConfig = Nowhere; return Sandbox.CreateAsync(o); };
            Assert.Throws<InvalidArgumentException>(() => create(new SandboxCreateOptions { Image = "x", Volumes = new[] { new Volume { Name = "v", MountPath = "/m", Host = new Host { Path = "relative" } } } }).GetAwaiter().GetResult());
            Assert.Throws<InvalidArgumentException>(() => create(new SandboxCreateOptions { Image = "x", Volumes = new[] { new Volume { Name = "v", MountPath = "/m", Host = new Host { Path = "/a" }, Pvc = new PVC { ClaimName = "c" } } } }).GetAwaiter().GetResult());
            Assert.Throws<InvalidArgumentException>(() => create(new SandboxCreateOptions { Image = "x", Lifecycle = new SandboxLifecycle { PreStart = new LifecycleHook { Command = new string[0] } } }).GetAwaiter().GetResult());
            Assert.Throws<InvalidArgumentException>(() => create(new SandboxCreateOptions { Image = "x", Lifecycle = new SandboxLifecycle { Periodic = new[] { new PeriodicLifecycleHook { Name = "n", Command = new[] { "true" } } } } }).GetAwaiter().GetResult());
            Assert.Throws<InvalidArgumentException>(() => create(new SandboxCreateOptions { Image = "x", Lifecycle = new SandboxLifecycle { PreStart = new LifecycleHook { Command = new[] { "true" }, TimeoutSeconds = 0 } } }).GetAwaiter().GetResult());
            Assert.Throws<InvalidArgumentException>(() => create(new SandboxCreateOptions { SnapshotId = "s", Entrypoint = new[] { "x" } }).GetAwaiter().GetResult());
            // A Windows drive path is absolute too: the request goes out (and fails to connect).
            Assert.Throws<SandboxInternalException>(() => create(new SandboxCreateOptions { Image = "x", Volumes = new[] { new Volume { Name = "v", MountPath = "/m", Host = new Host { Path = "C:\\data" } } } }).GetAwaiter().GetResult());
        }

        [Test]
        public void VaultAndIsolationModelsAreValidated()
        {
            Assert.Throws<InvalidArgumentException>(() => new CredentialBinding { Name = "b", Match = new CredentialMatch { Hosts = new string[0] }, Auth = new CredentialAuth { Type = "bearer" } }.ToJson());
            Assert.Throws<InvalidArgumentException>(() => new Credential { Name = "c", Source = new InlineCredentialSource() }.ToJson());
            Assert.Throws<InvalidArgumentException>(() => new CreateIsolatedSessionRequest(Workspace: null).ToJson());
            Assert.Throws<InvalidArgumentException>(() => new CreateIsolatedSessionRequest(new IsolatedWorkspaceSpec("/w"), Uid: -1).ToJson());
            var sub = new CredentialAuth { Type = "passthrough", Substitutions = new[] { new CredentialSubstitution { Credential = "c", Placeholder = "__C__", In = new[] { "query" } } } }.ToJson();
            Assert.AreEqual("{\"type\":\"passthrough\",\"substitutions\":[{\"credential\":\"c\",\"placeholder\":\"__C__\",\"in\":[\"query\"]}]}", Json.Write(sub));
            var req = new CreateIsolatedSessionRequest(new IsolatedWorkspaceSpec("/w", "overlay"), ShareNet: false, Binds: new List<BindMount> { new BindMount("/src", ReadOnly: true) }, EnvPassthrough: new EnvPassthroughSpec(Keys: new List<string> { "PATH" }));
            Assert.AreEqual("{\"share_net\":false,\"workspace\":{\"path\":\"/w\",\"mode\":\"overlay\"},\"binds\":[{\"source\":\"/src\",\"readonly\":true}],\"env_passthrough\":{\"mode\":\"deny\",\"keys\":[\"PATH\"]}}", Json.Write(req.ToJson()));
        }

        [Test]
        public void ClientIpPrefersRealPrivateInterfacesAndYieldsToTheCaller()
        {
            Func<string, string[], KeyValuePair<string, List<string>>> nic = (n, ips) => new KeyValuePair<string, List<string>>(n, ips.ToList());
            Assert.AreEqual("10.0.0.5", ClientIp.Select(new[] { nic("docker0", new[] { "172.17.0.1" }), nic("wlan0", new[] { "192.168.1.9" }), nic("eth1", new[] { "8.8.4.4", "10.0.0.5" }) }));
            Assert.AreEqual("192.168.1.9", ClientIp.Select(new[] { nic("tun0", new[] { "10.8.0.2" }), nic("wlan0", new[] { "169.254.1.1", "192.168.1.9" }) }));
            Assert.AreEqual("", ClientIp.Select(new[] { nic("veth12", new[] { "10.1.1.1" }), nic("x", new[] { "127.0.0.1", "0.0.0.0", "not-an-ip" }) }));
            var h = new Dictionary<string, object> { { "open-sandbox-client-ip", "1.2.3.4" } };
            ClientIp.Apply(h, "10.0.0.5");
            Assert.AreEqual(1, h.Count);
            h = new Dictionary<string, object>();
            ClientIp.Apply(h, "10.0.0.5");
            Assert.AreEqual("10.0.0.5", h["OPEN-SANDBOX-CLIENT-IP"]);
            ClientIp.Apply(h = new Dictionary<string, object>(), "");
            Assert.AreEqual(0, h.Count);
            // The config's connection carries it (when the host has an address) without changing Headers.
            var c = new ConnectionConfig(new ConnectionConfigOptions { Domain = "d:1" });
            var sent = Json.Obj(c.ToSessionConnection()["headers"]);
            if (ClientIp.Value.Length > 0) Assert.AreEqual(ClientIp.Value, sent[ClientIp.Header]);
            Assert.IsFalse(c.Headers.ContainsKey(ClientIp.Header));
        }

        [Test]
        public void OpResultsMapToTheModels()
        {
            var st = IsolatedSessionState.FromJson(Json.Parse("{\"status\":\"active\",\"created_at\":\"2026-12-03T10:00:00+00:00\",\"last_run_at\":null,\"idle_remaining_seconds\":42,\"profile\":\"strict\",\"share_net\":true}"));
            Assert.AreEqual("active", st.Status);
            Assert.AreEqual(new DateTimeOffset(2026, 12, 3, 10, 0, 0, TimeSpan.Zero), st.CreatedAt);
            Assert.IsNull(st.LastRunAt);
            Assert.AreEqual(42, st.IdleRemainingSeconds);
            Assert.AreEqual("strict", st.Params["profile"]);
            Assert.AreEqual(true, st.Params["share_net"]);
            Assert.IsFalse(st.Params.ContainsKey("status"));
            var caps = IsolatedCapabilities.FromJson(Json.Parse("{\"available\":true,\"isolator\":\"bwrap\",\"commit_supported\":false,\"setpriv_available\":true}"));
            Assert.IsTrue(caps.Available);
            Assert.AreEqual("bwrap", caps.Isolator);
            Assert.AreEqual(true, caps.SetprivAvailable);
            Assert.IsNull(caps.UsernsAvailable);
            var run = IsolatedRunStatus.FromJson(Json.Parse("{\"session_id\":\"s\",\"run_id\":\"r\",\"running\":false,\"exit_code\":3,\"error\":null}"));
            Assert.AreEqual("r", run.RunId);
            Assert.AreEqual(3, run.ExitCode);
            var vault = CredentialVaultState.FromJson(Json.Parse("{\"revision\":2,\"credentials\":[{\"name\":\"gh\",\"source_type\":\"inline\",\"revision\":1}],\"bindings\":[{\"name\":\"api\",\"revision\":2,\"match\":{\"hosts\":[\"a.example.com\"],\"schemes\":[\"https\"]},\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Api-Key\"}}]}"));
            Assert.AreEqual(2, vault.Revision);
            Assert.AreEqual("inline", vault.Credentials[0].SourceType);
            Assert.AreEqual("X-Api-Key", vault.Bindings[0].Auth.Name);
            CollectionAssert.AreEqual(new[] { "a.example.com" }, vault.Bindings[0].Match.Hosts);
            var tpl = TemplateInfo.FromJson(Json.Parse("{\"template_id\":\"tpl_1\",\"format\":\"overlaybd\",\"status\":{\"phase\":\"Failed\",\"message\":\"boom\"},\"readiness\":{\"probe\":\"cmd://true\",\"warmup_seconds\":5},\"created_at\":\"2026-12-03T10:00:00Z\"}"));
            Assert.AreEqual(TemplatePhases.Failed, tpl.Status.Phase);
            Assert.AreEqual("boom", tpl.Status.Message);
            Assert.AreEqual(5, tpl.Readiness.WarmupSeconds);
            Assert.AreEqual(new DateTime(2026, 12, 3, 10, 0, 0, DateTimeKind.Utc), tpl.CreatedAt.ToUniversalTime());
        }

        [Test]
        public void IdentityIdsAreCheckedAndScopeEveryFileOp()
        {
            var files = new FilesService(new SandboxCore(0));
            Assert.Throws<InvalidArgumentException>(() => files.WithIdentity(uint.MaxValue, 0));
            Assert.Throws<InvalidArgumentException>(() => files.WithIdentity(0, uint.MaxValue));
            var iso = new FilesService(new SandboxCore(0), "isolated_session", "s1");
            Assert.Throws<InvalidArgumentException>(() => iso.WithIdentity(1, 1));
            Assert.IsInstanceOf<IIdentitySandboxFiles>(files);

            // Every op of a scoped file API carries its scope (handle 0 is unknown: each call fails after the trace).
            var seen = new List<KeyValuePair<string, object>>();
            Bridge.OpTrace = (op, json) => { lock (seen) seen.Add(new KeyValuePair<string, object>(op, Json.Parse(json))); };
            try
            {
                var user = files.WithIdentity(1000, 4294967294);
                Action<Func<Task>> fails = f => Assert.Catch<SandboxException>(() => f().GetAwaiter().GetResult());
                fails(() => user.ReadFileAsync("/a"));
                fails(() => user.WriteFilesAsync(new[] { new WriteEntry { Path = "/a", Data = "x" } }));
                fails(() => user.WriteFilesAsync(new[] { new WriteEntry { Path = "/a", Data = new System.IO.MemoryStream(new byte[3]) } }));
                fails(() => user.ListDirectoryAsync("/"));
                fails(async () => { var e = user.ReadBytesStreamAsync("/a").GetAsyncEnumerator(); try { await e.MoveNextAsync(); } finally { await e.DisposeAsync(); } });
                fails(() => iso.DeleteFilesAsync(new[] { "/a" }));
            }
            finally
            {
                Bridge.OpTrace = null;
            }
            CollectionAssert.AreEqual(new[] { "files.read_file", "files.write_files", "upload.open", "files.list_directory", "download.open", "files.delete_files" }, seen.Select(kv => kv.Key).ToArray());
            foreach (var kv in seen.Take(5))
            {
                Assert.AreEqual(1000L, Json.Long(Json.Get(kv.Value, "identity"), "uid"), kv.Key);
                Assert.AreEqual(4294967294L, Json.Long(Json.Get(kv.Value, "identity"), "gid"), kv.Key);
            }
            Assert.AreEqual("s1", Json.Str(seen[5].Value, "isolated_session"));
            CollectionAssert.IsEmpty(seen.SelectMany(kv => Manifest.Check(kv.Key, Json.Write(kv.Value))).ToList());
        }
    }
}

namespace OpenSandbox.Tests.Server
{
    [TestFixture]
    public class Areas11ServerTests
    {
        private readonly List<string> _unknownKeys = new List<string>();

        [TestFixtureSetUp]
        public void Trace()
        {
            ServerFixture.Require();
            Bridge.OpTrace = (op, json) => { lock (_unknownKeys) _unknownKeys.AddRange(Manifest.Check(op, json)); };
        }

        [TestFixtureTearDown]
        public void Untrace()
        {
            Bridge.OpTrace = null;
        }

        [Test]
        public void ZzEveryOpSentIsInTheManifest()
        {
            lock (_unknownKeys) CollectionAssert.IsEmpty(_unknownKeys);
        }

        [Test]
        public async Task TemplateBuildCreateFromListAndDelete()
        {
            var tag = Guid.NewGuid().ToString("N");
            using (var m = SandboxManager.Create())
            {
                var t = await m.CreateTemplateAsync(new CreateTemplateRequest
                {
                    Image = "python:3.11",
                    Publish = "s3://dotnet/" + tag,
                    Entrypoint = new[] { "sleep", "infinity" },
                    Env = new Dictionary<string, string> { { "TPL_GREETING", "from the template" } },
                    Metadata = new Dictionary<string, string> { { "suite", tag } },
                });
                StringAssert.StartsWith("tpl_", t.TemplateId);
                CollectionAssert.Contains(new[] { TemplatePhases.Pending, TemplatePhases.Building }, t.Status.Phase);
                Assert.AreEqual("overlaybd", t.Format);
                var deadline = DateTime.UtcNow.AddSeconds(60);
                while (t.Status.Phase != TemplatePhases.Succeeded)
                {
                    Assert.AreNotEqual(TemplatePhases.Failed, t.Status.Phase, t.Status.Message);
                    Assert.Less(DateTime.UtcNow, deadline, "the build did not finish in 60 s");
                    await Task.Delay(200);
                    t = await m.GetTemplateAsync(t.TemplateId);
                }
                StringAssert.StartsWith("local:templates/", t.Status.ManifestRef);
                Assert.AreEqual("from the template", t.Env["TPL_GREETING"]);

                var page = await m.ListTemplatesAsync(new TemplateFilter { Metadata = new Dictionary<string, string> { { "suite", tag } } });
                Assert.AreEqual(1, page.Items.Count);
                Assert.AreEqual(t.TemplateId, page.Items[0].TemplateId);
                Assert.AreEqual(1, page.Pagination.TotalItems);

                var sb = await Sandbox.CreateFromTemplateAsync(new SandboxCreateFromTemplateOptions
                {
                    TemplateId = t.TemplateId,
                    TimeoutSeconds = 600,
                    Metadata = new Dictionary<string, string> { { "from", "template" } },
                });
                try
                {
                    var e = await sb.Commands.RunAsync("echo \"$TPL_GREETING\"");
                    Assert.AreEqual("from the template", e.Logs.Stdout.Single().Text.TrimEnd());
                    var info = await sb.GetInfoAsync();
                    CollectionAssert.AreEqual(new[] { "sleep", "infinity" }, info.Entrypoint);
                    // (1.1) Template-backed, and a new handle learns it from OPEN-SANDBOX-ORIGIN:
                    // its egress policy comes through the lifecycle server, it has no vault.
                    Assert.AreEqual(SandboxOrigin.Template, sb.Origin);
                    using (var again = await Sandbox.ConnectAsync(new SandboxConnectOptions { SandboxId = sb.Id, SkipHealthCheck = true }))
                    {
                        Assert.AreEqual(SandboxOrigin.Template, again.Origin);
                        Assert.AreEqual(SandboxOrigin.Template, (await again.GetEndpointAsync(44772)).Origin);
                        Assert.IsNotNull(await again.GetEgressPolicyAsync());
                        Assert.Throws<InvalidArgumentException>(() => again.CredentialVault.GetAsync().GetAwaiter().GetResult());
                    }
                    await m.DeleteTemplateAsync(t.TemplateId);
                    var gone = Assert.Throws<SandboxApiException>(() => m.GetTemplateAsync(t.TemplateId).GetAwaiter().GetResult());
                    Assert.AreEqual(404, gone.StatusCode);
                    Assert.AreEqual(0, (await sb.Commands.RunAsync("true")).ExitCode, "the sandbox outlives its template");
                }
                finally
                {
                    await sb.KillAsync();
                    sb.Dispose();
                }
            }
        }

        [Test]
        public async Task ArgvRunsWithoutAShell()
        {
            var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.11" });
            try
            {
                var e = await sb.Commands.RunAsync(new[] { "printf", "%s|", "$HOME", "a b" });
                Assert.AreEqual(0, e.ExitCode);
                Assert.AreEqual("$HOME|a b|", string.Concat(e.Logs.Stdout.Select(m => m.Text)).TrimEnd());
                var types = new List<string>();
                await ForEachAsync(sb.Commands.RunStreamAsync(new[] { "sh", "-c", "exit 3" }), ev => types.Add(ev.Type));
                CollectionAssert.Contains(types, ServerStreamEventTypes.Error);
                Assert.Throws<InvalidArgumentException>(() => sb.Commands.RunAsync(new string[0]).GetAwaiter().GetResult());
            }
            finally
            {
                await sb.KillAsync();
                sb.Dispose();
            }
        }

        private static async Task ForEachAsync<T>(IAsyncEnumerable<T> items, Action<T> f)
        {
            var e = items.GetAsyncEnumerator();
            try
            {
                while (await e.MoveNextAsync()) f(e.Current);
            }
            finally
            {
                await e.DisposeAsync();
            }
        }

        [Test]
        public async Task CredentialVaultCreateReadPatchDelete()
        {
            var sb = await Sandbox.CreateAsync(new SandboxCreateOptions
            {
                Image = "python:3.11",
                NetworkPolicy = new NetworkPolicy { DefaultAction = NetworkRuleAction.Deny, Egress = new List<NetworkRule> { new NetworkRule { Action = NetworkRuleAction.Allow, Target = "*.example.com" } } },
                CredentialProxy = new CredentialProxyConfig { Enabled = true },
            });
            try
            {
                var st = await sb.CredentialVault.CreateAsync(
                    new[] { new Credential { Name = "gh", Source = new InlineCredentialSource { Value = "dotnet-secret-1" } } },
                    new[]
                    {
                        new CredentialBinding { Name = "api", Match = new CredentialMatch { Hosts = new[] { "api.example.com" } }, Auth = new CredentialAuth { Type = "apiKey", Name = "x-api-key", Credential = "gh" } },
                        new CredentialBinding
                        {
                            Name = "subst",
                            Match = new CredentialMatch { Hosts = new[] { "q.example.com" }, Schemes = new[] { "http" } },
                            Auth = new CredentialAuth { Type = "passthrough", Substitutions = new[] { new CredentialSubstitution { Credential = "gh", Placeholder = "__GH__", In = new[] { "query" } } } },
                        },
                    });
                Assert.AreEqual(1, st.Revision);
                Assert.AreEqual("inline", st.Credentials.Single().SourceType);
                var api = st.Bindings.Single(b => b.Name == "api");
                Assert.AreEqual("X-Api-Key", api.Auth.Name);
                CollectionAssert.AreEqual(new[] { "https" }, api.Match.Schemes);

                var stale = Assert.Throws<SandboxApiException>(() => sb.PatchCredentialVaultAsync(new CredentialVaultPatchRequest
                {
                    ExpectedRevision = 9,
                    Credentials = new CredentialMutationSet { Add = new[] { new Credential { Name = "two", Source = new InlineCredentialSource { Value = "s2" } } } },
                }).GetAwaiter().GetResult());
                Assert.AreEqual(409, stale.StatusCode);

                st = await sb.PatchCredentialVaultAsync(new CredentialVaultPatchRequest
                {
                    ExpectedRevision = 1,
                    Credentials = new CredentialMutationSet { Add = new[] { new Credential { Name = "two", Source = new InlineCredentialSource { Value = "s2" } } } },
                    Bindings = new CredentialBindingMutationSet { Delete = new[] { "subst" } },
                });
                Assert.AreEqual(2, st.Revision);
                Assert.AreEqual(2, (await sb.ListCredentialVaultCredentialsAsync()).Count);
                Assert.AreEqual(2, (await sb.GetCredentialVaultCredentialAsync("two")).Revision);
                Assert.AreEqual("api", (await sb.ListCredentialVaultBindingsAsync()).Single().Name);
                Assert.AreEqual("apiKey", (await sb.GetCredentialVaultBindingAsync("api")).Auth.Type);
                Assert.AreEqual(2, (await sb.GetCredentialVaultAsync()).Revision);
                await sb.DeleteCredentialVaultAsync();
                var gone = Assert.Throws<SandboxApiException>(() => sb.CredentialVault.GetAsync().GetAwaiter().GetResult());
                Assert.AreEqual(404, gone.StatusCode);
            }
            finally
            {
                await sb.KillAsync();
                sb.Dispose();
            }
        }

        [Test]
        public async Task VaultWithoutCredentialProxyIsPreconditionFailed()
        {
            var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.11" });
            try
            {
                var e = Assert.Throws<SandboxApiException>(() => sb.CredentialVault.CreateAsync(new Credential[0], new CredentialBinding[0]).GetAwaiter().GetResult());
                Assert.AreEqual(412, e.StatusCode);
            }
            finally
            {
                await sb.KillAsync();
                sb.Dispose();
            }
        }

        [Test]
        public void FailingAndInvalidLifecycleHooksFailTheCreate()
        {
            var failing = Assert.Throws<SandboxApiException>(() => Sandbox.CreateAsync(new SandboxCreateOptions
            {
                Image = "python:3.11",
                Lifecycle = new SandboxLifecycle { PreStart = new LifecycleHook { Command = new[] { "sh", "-c", "echo not-ready >&2; exit 4" } } },
            }).GetAwaiter().GetResult());
            Assert.AreEqual(500, failing.StatusCode);
            StringAssert.Contains("exited with code 4", failing.Message);
            var bad = Assert.Throws<SandboxApiException>(() => Sandbox.CreateAsync(new SandboxCreateOptions
            {
                Image = "python:3.11",
                Lifecycle = new SandboxLifecycle { Periodic = new[] { new PeriodicLifecycleHook { Name = "x", Schedule = "every now and then", Command = new[] { "true" } } } },
            }).GetAwaiter().GetResult());
            Assert.AreEqual(400, bad.StatusCode);
        }

        [Test]
        public async Task IsolatedSessionsAndIdentityFiles()
        {
            var sb = await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "python:3.11" });
            try
            {
                var caps = await sb.Isolation.CapabilitiesAsync();
                var missing = Assert.Throws<SandboxApiException>(() => sb.Isolation.AttachAsync("00000000-0000-0000-0000-000000000000").GetAwaiter().GetResult());
                Assert.AreEqual(404, missing.StatusCode);
                Assert.IsNotNull(caps.Isolator);
                // As the Go suite: nested namespaces and id mapping need the server under runc
                // (bubblewrap's root is read-only), whose images need scripts/local-registry.sh.
                if (Environment.GetEnvironmentVariable("WITH_SERVER_RUNTIME") != "runc")
                    Assert.Ignore("isolated sessions and identity files need the server under runc: WITH_SERVER_RUNTIME=runc");
                Assert.IsTrue(caps.Available, caps.Message);
                await sb.Commands.RunAsync("mkdir -p /workspace/iso/dotnet && chmod 777 /workspace/iso/dotnet");
                var s = await sb.Isolation.CreateAsync(new CreateIsolatedSessionRequest(new IsolatedWorkspaceSpec("/workspace/iso/dotnet")));
                try
                {
                    var out1 = new List<string>();
                    var e = await s.RunAsync("cd /tmp && X=5 && pwd", handlers: new ExecutionHandlers { OnStdout = m => { out1.Add(m.Text.TrimEnd()); return Task.CompletedTask; } });
                    Assert.AreEqual(0, e.ExitCode);
                    CollectionAssert.AreEqual(new[] { "/tmp" }, out1);
                    e = await s.RunAsync("echo $X $Y", new IsolatedRunOpts(Envs: new Dictionary<string, string> { { "Y", "6" } }));
                    Assert.AreEqual("5 6", e.Logs.Stdout.Single().Text.TrimEnd());
                    Assert.AreEqual("active", (await s.GetAsync()).Status);
                    Assert.IsTrue((await sb.Isolation.ListAsync()).Any(x => x.SessionId == s.SessionId));
                    await s.Files.WriteFilesAsync(new[] { new WriteEntry { Path = "/tmp/in-session.txt", Data = "inside" } });
                    Assert.AreEqual("inside", await s.Files.ReadFileAsync("/tmp/in-session.txt"));
                    var bg = await s.RunBackgroundAsync("echo bg-out");
                    var deadline = DateTime.UtcNow.AddSeconds(20);
                    IsolatedRunStatus status;
                    while ((status = await s.GetRunStatusAsync(bg.RunId)).Running && DateTime.UtcNow < deadline) await Task.Delay(100);
                    Assert.AreEqual(0, status.ExitCode);
                    StringAssert.Contains("bg-out", (await s.GetRunLogsAsync(bg.RunId)).Text);
                }
                finally
                {
                    await s.DeleteAsync();
                }

                var user = ((IIdentitySandboxFiles)sb.Files).WithIdentity(1000, 1000);
                await user.WriteFilesAsync(new[] { new WriteEntry { Path = "/workspace/iso/dotnet/mine.txt", Data = "mine", Mode = 640 } });
                var st = await sb.Commands.RunAsync("stat -c '%u:%g %a' /workspace/iso/dotnet/mine.txt");
                Assert.AreEqual("1000:1000 640", st.Logs.Stdout.Single().Text.TrimEnd());
                await sb.Commands.RunAsync("echo secret > /workspace/iso/dotnet/s && chmod 600 /workspace/iso/dotnet/s");
                var denied = Assert.Throws<SandboxApiException>(() => user.ReadFileAsync("/workspace/iso/dotnet/s").GetAwaiter().GetResult());
                Assert.AreEqual(403, denied.StatusCode);
            }
            finally
            {
                await sb.KillAsync();
                sb.Dispose();
            }
        }
    }
}
