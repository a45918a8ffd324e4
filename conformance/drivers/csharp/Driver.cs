// Conformance driver of the C# SDK (bindings/dotnet): speaks conformance/PROTOCOL.md over
// stdin/stdout and performs every op through the public OpenSandbox API only, the way a
// user of the official Alibaba.OpenSandbox package would call it.
// Built by `make build-csharp` into .work/dotnet/driver/ (mcs, run with mono).

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Security.Cryptography;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox;
using OpenSandbox.CodeInterpreter;
using OpenSandbox.CodeInterpreter.Models;
using OpenSandbox.Config;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;

namespace OpenSandbox.Conformance
{
    internal sealed class DriverError : Exception
    {
        public DriverError(string kind, string message) : base(message) { Kind = kind; }
        public string Kind { get; private set; }
    }

    /// <summary>Arguments of one request, with typed accessors that fail as driver_error.</summary>
    internal sealed class A
    {
        private readonly Dictionary<string, object> _d;

        public A(object o) { _d = (o as Dictionary<string, object>) ?? new Dictionary<string, object>(); }

        public bool Has(string k) { return _d.ContainsKey(k); }
        public object Raw(string k) { object v; return _d.TryGetValue(k, out v) ? v : null; }

        public string Str(string k)
        {
            var v = OptStr(k);
            if (v == null) throw new DriverError("driver_error", "argument " + k + " is required");
            return v;
        }

        public string OptStr(string k) { return Json.AsString(Raw(k)); }
        public bool Bool(string k) { var v = Raw(k); return v is bool && (bool)v; }

        public long? OptLong(string k)
        {
            var v = Raw(k);
            if (v == null) return null;
            var l = Json.AsLong(v);
            if (l == null) throw new DriverError("driver_error", "argument " + k + " is not a number");
            return l;
        }

        public double? OptDouble(string k)
        {
            var v = Raw(k);
            if (v is long) return (long)v;
            if (v is double) return (double)v;
            return null;
        }

        public A Obj(string k) { var v = Raw(k) as Dictionary<string, object>; return v == null ? null : new A(v); }

        public List<A> Objs(string k)
        {
            var l = Raw(k) as List<object>;
            return l == null ? new List<A>() : l.Select(x => new A(x)).ToList();
        }

        public List<string> StrList(string k)
        {
            var l = Raw(k) as List<object>;
            return l == null ? null : l.Select(Json.AsString).ToList();
        }

        public Dictionary<string, string> StrMap(string k)
        {
            var d = Raw(k) as Dictionary<string, object>;
            if (d == null) return null;
            var r = new Dictionary<string, string>();
            foreach (var kv in d) r[kv.Key] = Json.AsString(kv.Value);
            return r;
        }
    }

    /// <summary>The handlers of one run: records callbacks, hashes stdout, reports init.</summary>
    internal sealed class Recorder
    {
        private readonly List<object> _events;
        private readonly SHA256 _sha;
        private long _bytes;
        private long _lines;
        /// <summary>The request's skip_accumulation: the handlers' own option.</summary>
        public bool Skip;
        public readonly TaskCompletionSource<string> Init = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);

        public Recorder(bool record, bool digest)
        {
            if (record) _events = new List<object>();
            if (digest) _sha = SHA256.Create();
        }

        private void Push(Dictionary<string, object> e) { if (_events != null) _events.Add(e); }

        public ExecutionHandlers Handlers()
        {
            return new ExecutionHandlers
            {
                SkipAccumulation = _sha != null || Skip,
                OnInit = i => { Init.TrySetResult(i.Id); Push(Ev("init", "id", i.Id)); return Task.CompletedTask; },
                OnStdout = m =>
                {
                    if (_sha != null)
                    {
                        // The output's bytes whatever the framing: a line-framed text gets
                        // its newline back, a kept one already ends with it.
                        var text = m.Text ?? "";
                        var b = Encoding.UTF8.GetBytes(text);
                        _sha.TransformBlock(b, 0, b.Length, null, 0);
                        _bytes += b.Length;
                        foreach (var c in b) if (c == (byte)'\n') _lines++;
                        if (!text.EndsWith("\n", StringComparison.Ordinal))
                        {
                            _sha.TransformBlock(NewLine, 0, 1, null, 0);
                            _bytes += 1;
                            _lines++;
                        }
                    }
                    Push(Ev("stdout", "text", m.Text));
                    return Task.CompletedTask;
                },
                OnStderr = m => { Push(Ev("stderr", "text", m.Text)); return Task.CompletedTask; },
                OnResult = r => { Push(Ev("result", "text", r.Text)); return Task.CompletedTask; },
                OnError = e =>
                {
                    var d = Ev("error", "name", e.Name);
                    d["value"] = e.Value;
                    Push(d);
                    return Task.CompletedTask;
                },
                OnExecutionComplete = c => { Push(Ev("execution_complete", null, null)); return Task.CompletedTask; },
            };
        }

        /// <summary>The recording handlers when <paramref name="use"/>, else only the
        /// skip_accumulation option (as a user keeping no output writes it), else null.</summary>
        public ExecutionHandlers HandlersIf(bool use)
        {
            if (use) return Handlers();
            return Skip ? new ExecutionHandlers { SkipAccumulation = true } : null;
        }

        private static readonly byte[] NewLine = { (byte)'\n' };

        private static Dictionary<string, object> Ev(string type, string k, object v)
        {
            var d = new Dictionary<string, object> { { "type", type } };
            if (k != null) d[k] = v;
            return d;
        }

        public void AddExtra(Dictionary<string, object> result)
        {
            if (_events != null) result["events"] = _events;
            if (_sha != null)
            {
                _sha.TransformFinalBlock(new byte[0], 0, 0);
                result["stdout_digest"] = new Dictionary<string, object>
                {
                    { "sha256", Hex(_sha.Hash) }, { "bytes", _bytes }, { "lines", _lines },
                };
            }
        }

        public static string Hex(byte[] h)
        {
            var sb = new StringBuilder();
            foreach (var b in h) sb.Append(b.ToString("x2"));
            return sb.ToString();
        }
    }

    internal static partial class Program
    {
        private static readonly Dictionary<string, Sandbox> Sandboxes = new Dictionary<string, Sandbox>();
        private static readonly Dictionary<string, Task<Dictionary<string, object>>> Runs = new Dictionary<string, Task<Dictionary<string, object>>>();
        private static ConnectionConfig _defaultConfig;
        private static readonly Dictionary<string, CancellationTokenSource> Cancels = new Dictionary<string, CancellationTokenSource>();
        private static int _runSeq;
        private static readonly Dictionary<string, OpenSandbox.Services.PtyStream> Ptys = new Dictionary<string, OpenSandbox.Services.PtyStream>();

        private static readonly string[] Ops =
        {
            "sandbox.create", "sandbox.connect", "sandbox.resume", "sandbox.get_info", "sandbox.is_healthy",
            "sandbox.renew", "sandbox.patch_metadata", "sandbox.pause", "sandbox.kill", "sandbox.get_endpoint",
            "sandbox.get_metrics", "sandbox.create_snapshot", "sandbox.get_egress_policy",
            "sandbox.patch_egress_rules", "sandbox.delete_egress_rules", "sandbox.get_diagnostic_logs",
            "sandbox.get_diagnostic_events", "manager.list_sandbox_infos", "manager.get_sandbox_info",
            "manager.kill_sandbox", "manager.pause_sandbox", "manager.resume_sandbox", "manager.renew_sandbox",
            "manager.patch_sandbox_metadata", "manager.get_endpoint", "manager.get_snapshot",
            "manager.delete_snapshot", "manager.list_snapshots", "commands.run", "commands.start",
            "execution.wait", "execution.cancel", "commands.interrupt", "commands.get_command_status",
            "commands.get_background_command_logs", "commands.set_env", "commands.create_session", "commands.run_in_session",
            "commands.delete_session", "code.create_context", "code.get_context", "code.delete_context",
            "code.list_contexts", "code.delete_contexts", "code.run", "code.start", "code.interrupt",
            "files.write_file", "files.write_files", "files.read_file", "files.read_bytes",
            "files.read_bytes_stream", "files.get_file_info", "files.delete_files", "files.delete_directories",
            "files.move_files", "files.set_permissions", "files.create_directories", "files.replace_contents",
            "files.replace_contents_detailed", "files.search", "files.list_directory", "metrics.watch",
            "pty.create", "pty.get", "pty.delete", "pty.attach", "pty.write", "pty.resize", "pty.read", "pty.close",
            "commands.follow_background_command_logs",
        };

        private static int Main()
        {
            var stdout = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false)) { AutoFlush = true, NewLine = "\n" };
            var stdin = new StreamReader(Console.OpenStandardInput(), new UTF8Encoding(false));
            var hello = new Dictionary<string, object>
            {
                { "hello", "opensandbox-conformance" }, { "protocol", 1L }, { "language", "csharp" },
                { "sdk", "Alibaba.OpenSandbox (bindings/dotnet)" }, { "sdk_version", Constants.SdkVersion },
                { "ops", Ops.Concat(Ops11).Concat(OpsExec).Cast<object>().ToList() },
            };
            stdout.WriteLine(Json.Write(hello));
            string line;
            while ((line = stdin.ReadLine()) != null)
            {
                if (line.Trim().Length == 0) continue;
                stdout.WriteLine(Json.Write(Answer(line)));
            }
            return 0;
        }

        private static Dictionary<string, object> Answer(string line)
        {
            object id = null;
            try
            {
                var req = Json.Parse(line);
                id = Json.Get(req, "id");
                var op = Json.Str(req, "op");
                if (op == null) throw new DriverError("driver_error", "request has no op");
                var result = Dispatch(op, new A(Json.Get(req, "args"))).GetAwaiter().GetResult();
                return new Dictionary<string, object> { { "id", id }, { "ok", true }, { "result", result } };
            }
            catch (Exception e)
            {
                return new Dictionary<string, object> { { "id", id }, { "ok", false }, { "error", ErrorJson(e) } };
            }
        }

        private static Dictionary<string, object> ErrorJson(Exception e)
        {
            var agg = e as AggregateException;
            if (agg != null && agg.InnerExceptions.Count == 1) e = agg.InnerException;
            var d = new Dictionary<string, object>
            {
                { "kind", "internal" }, { "status", null }, { "code", null }, { "request_id", null }, { "message", e.Message },
            };
            var de = e as DriverError;
            if (de != null)
            {
                d["kind"] = de.Kind;
                return d;
            }
            if (e is OperationCanceledException)
            {
                d["kind"] = "cancelled";
                return d;
            }
            var se = e as SandboxException;
            if (se == null)
            {
                d["kind"] = "driver_error";
                d["message"] = e.GetType().Name + ": " + e.Message;
                return d;
            }
            var api = se as SandboxApiException;
            string kind = se.Kind;
            if (kind == null)
            {
                if (se is InvalidArgumentException) kind = "invalid_argument";
                else if (se is SandboxReadyTimeoutException) kind = "ready_timeout";
                else if (api != null) kind = api.StatusCode == 404 ? "not_found" : api.StatusCode == 401 ? "unauthorized" : "api";
                else kind = "internal";
            }
            d["kind"] = kind;
            if (api != null && api.StatusCode.HasValue) d["status"] = (long)api.StatusCode.Value;
            d["code"] = se.Error == null ? null : se.Error.Code;
            d["request_id"] = se.RequestId;
            return d;
        }

        // ------------------------------------------------------------------ state

        private static ConnectionConfig DefaultConfig
        {
            get { return _defaultConfig ?? (_defaultConfig = new ConnectionConfig()); }
        }

        /// <summary>The config of a request with `connection` overrides, or null when it has none.</summary>
        private static ConnectionConfig Override(A args)
        {
            var c = args.Obj("connection");
            if (c == null) return null;
            var o = new ConnectionConfigOptions
            {
                Domain = c.OptStr("domain"),
                Headers = c.StrMap("headers"),
                UseServerProxy = c.Has("use_server_proxy") ? (bool?)c.Bool("use_server_proxy") : null,
            };
            if (c.Has("api_key")) o.ApiKey = c.OptStr("api_key") ?? "";
            var t = c.OptDouble("request_timeout_s");
            if (t.HasValue) o.RequestTimeoutSeconds = Math.Max(1, (int)Math.Ceiling(t.Value));
            return new ConnectionConfig(o);
        }

        private static ConnectionConfig Config(A args) { return Override(args) ?? DefaultConfig; }

        private static async Task<Sandbox> GetSandbox(A args)
        {
            var id = args.Str("sandbox");
            var over = Override(args);
            Sandbox s;
            if (over == null && Sandboxes.TryGetValue(id, out s)) return s;
            s = await Sandbox.ConnectAsync(new SandboxConnectOptions
            {
                SandboxId = id, ConnectionConfig = over ?? DefaultConfig, SkipHealthCheck = true,
            }).ConfigureAwait(false);
            if (over == null) Sandboxes[id] = s;
            return s;
        }

        private static void Keep(A args, Sandbox s)
        {
            if (args.Has("connection")) return;
            Sandbox old;
            if (Sandboxes.TryGetValue(s.Id, out old) && !ReferenceEquals(old, s)) old.Dispose();
            Sandboxes[s.Id] = s;
        }

        private static void Forget(string id)
        {
            Sandbox s;
            if (Sandboxes.TryGetValue(id, out s))
            {
                Sandboxes.Remove(id);
                s.Dispose();
            }
        }

        private static SandboxManager Manager(A args)
        {
            return SandboxManager.Create(new SandboxManagerOptions { ConnectionConfig = Config(args) });
        }

        private static int? Secs(A args, string k)
        {
            var d = args.OptDouble(k);
            if (!d.HasValue) return null;
            return Math.Max(1, (int)Math.Ceiling(d.Value));
        }

        // ------------------------------------------------------------------ dispatch

        private static async Task<object> Dispatch(string op, A a)
        {
            if (IsExecOp(op)) return await ExecOp(op, a).ConfigureAwait(false);
            var dot = op.IndexOf('.');
            var area = dot < 0 ? op : op.Substring(0, dot);
            switch (area)
            {
                case "sandbox": return await SandboxOp(op, a).ConfigureAwait(false);
                case "manager": return await ManagerOp(op, a).ConfigureAwait(false);
                case "commands":
                case "execution": return await CommandOp(op, a).ConfigureAwait(false);
                case "code": return await CodeOp(op, a).ConfigureAwait(false);
                case "pty": return await PtyOp(op, a).ConfigureAwait(false);
                case "files":
                case "metrics": return await FileOp(op, a).ConfigureAwait(false);
                case "credential_vault": return await VaultOp(op, a).ConfigureAwait(false);
                case "isolation": return await IsolationOp(op, a).ConfigureAwait(false);
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        private static List<NetworkRule> Rules(A a, string k)
        {
            return a.Objs(k).Select(r => new NetworkRule
            {
                Action = string.Equals(r.OptStr("action"), "allow", StringComparison.OrdinalIgnoreCase) ? NetworkRuleAction.Allow : NetworkRuleAction.Deny,
                Target = r.OptStr("target"),
            }).ToList();
        }

        private static async Task<object> SandboxOp(string op, A a)
        {
            switch (op)
            {
                case "sandbox.create":
                {
                    if (a.OptStr("template_id") != null)
                    {
                        var t = await CreateFromTemplate(a).ConfigureAwait(false);
                        Keep(a, t);
                        return new Dictionary<string, object> { { "id", t.Id } };
                    }
                    var o = new SandboxCreateOptions
                    {
                        ConnectionConfig = Config(a),
                        Image = a.OptStr("image"),
                        SnapshotId = a.OptStr("snapshot_id"),
                        Entrypoint = a.StrList("entrypoint"),
                        Env = a.StrMap("env"),
                        Metadata = a.StrMap("metadata"),
                        Resource = a.StrMap("resource"),
                        Extensions = a.StrMap("extensions"),
                        SkipHealthCheck = a.Bool("skip_health_check"),
                        ReadyTimeoutSeconds = Secs(a, "ready_timeout_s"),
                    };
                    if (a.Has("timeout_s"))
                    {
                        if (a.Raw("timeout_s") == null) o.ManualCleanup = true;
                        else o.TimeoutSeconds = Secs(a, "timeout_s");
                    }
                    var np = a.Obj("network_policy");
                    if (np != null)
                    {
                        o.NetworkPolicy = new NetworkPolicy { Egress = Rules(np, "egress") };
                        var da = np.OptStr("default_action");
                        if (da != null) o.NetworkPolicy.DefaultAction = da == "allow" ? NetworkRuleAction.Allow : NetworkRuleAction.Deny;
                    }
                    CreateOptions11(a, o);
                    var s = await Sandbox.CreateAsync(o).ConfigureAwait(false);
                    Keep(a, s);
                    return new Dictionary<string, object> { { "id", s.Id } };
                }
                case "sandbox.connect":
                case "sandbox.resume":
                {
                    var o = new SandboxConnectOptions
                    {
                        ConnectionConfig = Config(a),
                        SandboxId = a.Str("sandbox_id"),
                        SkipHealthCheck = a.Bool("skip_health_check"),
                        ReadyTimeoutSeconds = Secs(a, op == "sandbox.connect" ? "connect_timeout_s" : "resume_timeout_s"),
                    };
                    var s = op == "sandbox.connect"
                        ? await Sandbox.ConnectAsync(o).ConfigureAwait(false)
                        : await Sandbox.ResumeAsync(o).ConfigureAwait(false);
                    Keep(a, s);
                    return new Dictionary<string, object> { { "id", s.Id } };
                }
            }
            var sb = await GetSandbox(a).ConfigureAwait(false);
            switch (op)
            {
                case "sandbox.get_info": return Info(await sb.GetInfoAsync().ConfigureAwait(false));
                case "sandbox.is_healthy":
                    return new Dictionary<string, object> { { "healthy", await sb.IsHealthyAsync().ConfigureAwait(false) } };
                case "sandbox.renew":
                {
                    var r = await sb.RenewAsync(Secs(a, "seconds") ?? 0).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "expires_at", Time(r.ExpiresAt) } };
                }
                case "sandbox.patch_metadata": return Info(await sb.PatchMetadataAsync(a.StrMap("patch") ?? new Dictionary<string, string>()).ConfigureAwait(false));
                case "sandbox.pause": await sb.PauseAsync().ConfigureAwait(false); return null;
                case "sandbox.kill":
                    await sb.KillAsync().ConfigureAwait(false);
                    Forget(sb.Id);
                    return null;
                case "sandbox.get_endpoint": return EndpointJson(await sb.GetEndpointAsync((int)(a.OptLong("port") ?? 0)).ConfigureAwait(false));
                case "sandbox.get_metrics": return MetricsJson(await sb.GetMetricsAsync().ConfigureAwait(false));
                case "sandbox.create_snapshot": return Snapshot(await sb.CreateSnapshotAsync(a.OptStr("name")).ConfigureAwait(false));
                case "sandbox.get_egress_policy":
                {
                    var p = await sb.GetEgressPolicyAsync().ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "default_action", p.DefaultAction.HasValue ? (p.DefaultAction.Value == NetworkRuleAction.Allow ? "allow" : "deny") : null },
                        { "egress", p.Egress.Select(r => (object)new Dictionary<string, object> { { "action", r.Action == NetworkRuleAction.Allow ? "allow" : "deny" }, { "target", r.Target } }).ToList() },
                    };
                }
                case "sandbox.patch_egress_rules": await sb.PatchEgressRulesAsync(Rules(a, "rules")).ConfigureAwait(false); return null;
                case "sandbox.delete_egress_rules": await sb.DeleteEgressRulesAsync(a.StrList("targets") ?? new List<string>()).ConfigureAwait(false); return null;
                case "sandbox.get_diagnostic_logs": return Diag(await sb.GetDiagnosticLogsAsync(a.Str("scope")).ConfigureAwait(false));
                case "sandbox.get_diagnostic_events": return Diag(await sb.GetDiagnosticEventsAsync(a.Str("scope")).ConfigureAwait(false));
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        private static async Task<object> ManagerOp(string op, A a)
        {
            using (var m = Manager(a))
            {
                switch (op)
                {
                    case "manager.list_sandbox_infos":
                    {
                        var r = await m.ListSandboxInfosAsync(new SandboxFilter
                        {
                            States = a.StrList("states"), Metadata = a.StrMap("metadata"),
                            Page = (int?)a.OptLong("page"), PageSize = (int?)a.OptLong("page_size"),
                        }).ConfigureAwait(false);
                        return new Dictionary<string, object>
                        {
                            { "sandbox_infos", r.Items.Select(x => (object)Info(x)).ToList() }, { "pagination", Page(r.Pagination) },
                        };
                    }
                    case "manager.get_sandbox_info": return Info(await m.GetSandboxInfoAsync(a.Str("sandbox_id")).ConfigureAwait(false));
                    case "manager.kill_sandbox":
                        await m.KillSandboxAsync(a.Str("sandbox_id")).ConfigureAwait(false);
                        Forget(a.Str("sandbox_id"));
                        return null;
                    case "manager.pause_sandbox": await m.PauseSandboxAsync(a.Str("sandbox_id")).ConfigureAwait(false); return null;
                    case "manager.resume_sandbox": await m.ResumeSandboxAsync(a.Str("sandbox_id")).ConfigureAwait(false); return null;
                    case "manager.renew_sandbox":
                    {
                        var r = await m.RenewSandboxAsync(a.Str("sandbox_id"), Secs(a, "seconds") ?? 0).ConfigureAwait(false);
                        return new Dictionary<string, object> { { "expires_at", Time(r.ExpiresAt) } };
                    }
                    case "manager.patch_sandbox_metadata":
                        return Info(await m.PatchSandboxMetadataAsync(a.Str("sandbox_id"), a.StrMap("patch") ?? new Dictionary<string, string>()).ConfigureAwait(false));
                    case "manager.get_endpoint":
                        return EndpointJson(await m.GetEndpointAsync(a.Str("sandbox_id"), (int)(a.OptLong("port") ?? 0)).ConfigureAwait(false));
                    case "manager.get_snapshot": return Snapshot(await m.GetSnapshotAsync(a.Str("snapshot_id")).ConfigureAwait(false));
                    case "manager.delete_snapshot": await m.DeleteSnapshotAsync(a.Str("snapshot_id")).ConfigureAwait(false); return null;
                    case "manager.list_snapshots":
                    {
                        var r = await m.ListSnapshotsAsync(new SnapshotFilter
                        {
                            SandboxId = a.OptStr("sandbox_id"), States = a.StrList("states"),
                            Page = (int?)a.OptLong("page"), PageSize = (int?)a.OptLong("page_size"),
                        }).ConfigureAwait(false);
                        return new Dictionary<string, object>
                        {
                            { "snapshot_infos", r.Items.Select(x => (object)Snapshot(x)).ToList() }, { "pagination", Page(r.Pagination) },
                        };
                    }
                    case "manager.create_template":
                    case "manager.get_template":
                    case "manager.list_templates":
                    case "manager.delete_template":
                        return await TemplateOp(op, m, a).ConfigureAwait(false);
                }
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        private static RunCommandOptions CommandOptions(A a)
        {
            var ms = a.OptLong("timeout_ms");
            return new RunCommandOptions
            {
                Background = a.Bool("background"),
                WorkingDirectory = a.OptStr("working_directory"),
                TimeoutSeconds = ms.HasValue ? (int?)Math.Max(1, (int)((ms.Value + 999) / 1000)) : null,
                Uid = a.OptLong("uid"),
                Gid = a.OptLong("gid"),
                Envs = a.StrMap("envs"),
            };
        }

        private static async Task<Dictionary<string, object>> Finish(Task<Execution> run, Recorder rec)
        {
            var e = await run.ConfigureAwait(false);
            var d = ExecutionJson(e);
            rec.AddExtra(d);
            return d;
        }

        /// <summary>Starts a run in the background and answers once init arrived (commands.start / code.start).
        /// execution.cancel cancels the token the run was given (.NET's own cancellation).</summary>
        private static async Task<object> Start(Recorder rec, Func<ExecutionHandlers, CancellationToken, Task<Execution>> begin)
        {
            var cts = new CancellationTokenSource();
            var run = Finish(begin(rec.Handlers(), cts.Token), rec);
            var first = await Task.WhenAny(rec.Init.Task, run, Task.Delay(TimeSpan.FromSeconds(30))).ConfigureAwait(false);
            if (first == rec.Init.Task)
            {
                var handle = "run-" + Interlocked.Increment(ref _runSeq);
                Runs[handle] = run;
                Cancels[handle] = cts;
                return new Dictionary<string, object> { { "handle", handle }, { "id", rec.Init.Task.Result } };
            }
            if (first == run)
            {
                await run.ConfigureAwait(false); // throws the run's error
                throw new DriverError("driver_error", "the run ended without an init event");
            }
            throw new DriverError("driver_error", "no init event within 30 s");
        }

        private static async Task<object> CommandOp(string op, A a)
        {
            if (op == "execution.wait")
            {
                var handle = a.Str("handle");
                Task<Dictionary<string, object>> run;
                if (!Runs.TryGetValue(handle, out run)) throw new DriverError("driver_error", "no run with handle " + handle);
                Runs.Remove(handle);
                Cancels.Remove(handle);
                return await run.ConfigureAwait(false);
            }
            if (op == "execution.cancel")
            {
                var handle = a.Str("handle");
                CancellationTokenSource cts;
                if (!Cancels.TryGetValue(handle, out cts)) throw new DriverError("driver_error", "no run with handle " + handle);
                cts.Cancel();
                return null;
            }
            var sb = await GetSandbox(a).ConfigureAwait(false);
            switch (op)
            {
                case "commands.run":
                {
                    var rec = new Recorder(a.Bool("handlers"), a.Bool("digest")) { Skip = a.Bool("skip_accumulation") };
                    var opts = CommandOptions(a);
                    // Without handlers the SDK folds the run itself (RunAsync without handlers).
                    var useHandlers = a.Bool("handlers") || a.Bool("digest");
                    var argv = a.StrList("argv");
                    if (argv != null) return await Finish(sb.Commands.RunAsync(argv, opts, rec.HandlersIf(useHandlers)), rec).ConfigureAwait(false);
                    return await Finish(sb.Commands.RunAsync(a.Str("command"), opts, rec.HandlersIf(useHandlers)), rec).ConfigureAwait(false);
                }
                case "commands.start":
                {
                    var rec = new Recorder(a.Bool("handlers"), false) { Skip = a.Bool("skip_accumulation") };
                    var opts = CommandOptions(a);
                    var argv = a.StrList("argv");
                    if (argv != null) return await Start(rec, (h, ct) => sb.Commands.RunAsync(argv, opts, h, ct)).ConfigureAwait(false);
                    var cmd = a.Str("command");
                    return await Start(rec, (h, ct) => sb.Commands.RunAsync(cmd, opts, h, ct)).ConfigureAwait(false);
                }
                case "commands.interrupt": await sb.Commands.InterruptAsync(a.Str("id")).ConfigureAwait(false); return null;
                case "commands.set_env": await sb.Commands.SetEnvAsync(a.Str("key"), a.Str("value")).ConfigureAwait(false); return null;
                case "commands.get_command_status":
                {
                    var s = await sb.Commands.GetCommandStatusAsync(a.Str("id")).ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "id", s.Id }, { "content", s.Content }, { "running", s.Running },
                        { "exit_code", s.ExitCode.HasValue ? (object)(long)s.ExitCode.Value : null }, { "error", s.Error },
                        { "started_at", Time(s.StartedAt) }, { "finished_at", Time(s.FinishedAt) },
                    };
                }
                case "commands.follow_background_command_logs": return await FollowLogs(sb, a).ConfigureAwait(false);
                case "commands.get_background_command_logs":
                {
                    var l = await sb.Commands.GetBackgroundCommandLogsAsync(a.Str("id"), a.OptLong("cursor")).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "content", l.Content }, { "cursor", l.Cursor } };
                }
                case "commands.create_session":
                {
                    var id = await sb.Commands.CreateSessionAsync(new CreateSessionOptions { WorkingDirectory = a.OptStr("working_directory") }).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "session_id", id } };
                }
                case "commands.run_in_session":
                {
                    var rec = new Recorder(a.Bool("handlers"), false) { Skip = a.Bool("skip_accumulation") };
                    var ms = a.OptLong("timeout_ms");
                    var opts = new RunInSessionOptions
                    {
                        WorkingDirectory = a.OptStr("working_directory"),
                        TimeoutSeconds = ms.HasValue ? (int?)Math.Max(1, (int)((ms.Value + 999) / 1000)) : null,
                    };
                    return await Finish(sb.Commands.RunInSessionAsync(a.Str("session_id"), a.Str("command"), opts,
                        rec.HandlersIf(a.Bool("handlers"))), rec).ConfigureAwait(false);
                }
                case "commands.delete_session": await sb.Commands.DeleteSessionAsync(a.Str("session_id")).ConfigureAwait(false); return null;
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        private static async Task<object> CodeOp(string op, A a)
        {
            var sb = await GetSandbox(a).ConfigureAwait(false);
            var ci = await CodeInterpreter.CodeInterpreter.CreateAsync(sb).ConfigureAwait(false);
            var codes = ci.Codes;
            switch (op)
            {
                case "code.create_context":
                {
                    var cwd = a.OptStr("cwd");
                    var c = cwd == null
                        ? await codes.CreateContextAsync(a.Str("language")).ConfigureAwait(false)
                        : await codes.CreateContextAsync(a.Str("language"), cwd).ConfigureAwait(false);
                    return Ctx(c);
                }
                case "code.get_context": return Ctx(await codes.GetContextAsync(a.Str("context_id")).ConfigureAwait(false));
                case "code.delete_context": await codes.DeleteContextAsync(a.Str("context_id")).ConfigureAwait(false); return null;
                case "code.list_contexts":
                    return (await codes.ListContextsAsync(a.OptStr("language")).ConfigureAwait(false)).Select(x => (object)Ctx(x)).ToList();
                case "code.delete_contexts": await codes.DeleteContextsAsync(a.Str("language")).ConfigureAwait(false); return null;
                case "code.run":
                case "code.start":
                {
                    var rec = new Recorder(a.Bool("handlers"), false) { Skip = a.Bool("skip_accumulation") };
                    var ctxId = a.OptStr("context_id");
                    var code = a.Str("code");
                    Func<ExecutionHandlers, RunCodeOptions> opts = h => new RunCodeOptions
                    {
                        Context = ctxId == null ? null : new CodeContext { Id = ctxId },
                        Language = ctxId == null ? (a.OptStr("language") ?? SupportedLanguage.Python) : null,
                        Handlers = h,
                    };
                    if (op == "code.start") return await Start(rec, (h, ct) => codes.RunAsync(code, opts(h), ct)).ConfigureAwait(false);
                    return await Finish(codes.RunAsync(code, opts(rec.HandlersIf(a.Bool("handlers")))), rec).ConfigureAwait(false);
                }
                case "code.interrupt": await codes.InterruptAsync(a.Str("id")).ConfigureAwait(false); return null;
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        /// <summary>`text` repeated `times` times, produced chunk by chunk (never one buffer).</summary>
        private sealed class RepeatStream : Stream
        {
            private readonly byte[] _unit;
            private long _left;
            private int _pos;

            public RepeatStream(string text, long times) { _unit = Encoding.UTF8.GetBytes(text); _left = _unit.Length == 0 ? 0 : times; }

            public override int Read(byte[] buffer, int offset, int count)
            {
                var n = 0;
                while (n < count && _left > 0)
                {
                    var take = Math.Min(count - n, _unit.Length - _pos);
                    Buffer.BlockCopy(_unit, _pos, buffer, offset + n, take);
                    n += take;
                    _pos += take;
                    if (_pos == _unit.Length) { _pos = 0; _left--; }
                }
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

        private static WriteEntry Entry(A e)
        {
            object data;
            var gen = e.Obj("data_gen");
            if (gen != null) data = new RepeatStream(gen.Str("text"), gen.OptLong("times") ?? 0);
            else if (e.Has("data_b64")) data = Convert.FromBase64String(e.Str("data_b64"));
            else data = e.OptStr("data") ?? "";
            return new WriteEntry { Path = e.Str("path"), Data = data, Mode = (int?)e.OptLong("mode"), Owner = e.OptStr("owner"), Group = e.OptStr("group") };
        }

        private static async Task<object> FileOp(string op, A a)
        {
            var sb = await GetSandbox(a).ConfigureAwait(false);
            var f = await FileTarget(sb, a).ConfigureAwait(false);
            switch (op)
            {
                case "files.write_file": await f.WriteFilesAsync(new[] { Entry(a) }).ConfigureAwait(false); return null;
                case "files.write_files": await f.WriteFilesAsync(a.Objs("entries").Select(Entry).ToList()).ConfigureAwait(false); return null;
                case "files.read_file":
                {
                    var t = await f.ReadFileAsync(a.Str("path"), new ReadFileOptions { Range = a.OptStr("range"), Offset = (int?)a.OptLong("offset"), Limit = (int?)a.OptLong("limit") }).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "text", t } };
                }
                case "files.read_bytes":
                {
                    var b = await f.ReadBytesAsync(a.Str("path"), new ReadBytesOptions { Range = a.OptStr("range"), Offset = (int?)a.OptLong("offset"), Limit = (int?)a.OptLong("limit") }).ConfigureAwait(false);
                    using (var sha = SHA256.Create())
                        return new Dictionary<string, object> { { "data_b64", Convert.ToBase64String(b) }, { "size", (long)b.Length }, { "sha256", Recorder.Hex(sha.ComputeHash(b)) } };
                }
                case "files.read_bytes_stream":
                {
                    var stream = f.ReadBytesStreamAsync(a.Str("path"), new ReadBytesOptions { Range = a.OptStr("range"), Offset = (int?)a.OptLong("offset"), Limit = (int?)a.OptLong("limit") });
                    var en = stream.GetAsyncEnumerator();
                    long size = 0;
                    using (var sha = SHA256.Create())
                    {
                        try
                        {
                            while (await en.MoveNextAsync().ConfigureAwait(false))
                            {
                                size += en.Current.Length;
                                sha.TransformBlock(en.Current, 0, en.Current.Length, null, 0);
                            }
                        }
                        finally
                        {
                            await en.DisposeAsync().ConfigureAwait(false);
                        }
                        sha.TransformFinalBlock(new byte[0], 0, 0);
                        return new Dictionary<string, object> { { "size", size }, { "sha256", Recorder.Hex(sha.Hash) } };
                    }
                }
                case "files.get_file_info":
                {
                    var infos = await f.GetFileInfoAsync(a.StrList("paths") ?? new List<string>()).ConfigureAwait(false);
                    var d = new Dictionary<string, object>();
                    foreach (var kv in infos) d[kv.Key] = EntryJson(kv.Value);
                    return d;
                }
                case "files.delete_files": await f.DeleteFilesAsync(a.StrList("paths") ?? new List<string>()).ConfigureAwait(false); return null;
                case "files.delete_directories": await f.DeleteDirectoriesAsync(a.StrList("paths") ?? new List<string>()).ConfigureAwait(false); return null;
                case "files.move_files":
                    await f.MoveFilesAsync(a.Objs("entries").Select(e => new MoveEntry { Src = e.Str("src"), Dest = e.Str("dest") })).ConfigureAwait(false);
                    return null;
                case "files.set_permissions":
                    await f.SetPermissionsAsync(a.Objs("entries").Select(e => new SetPermissionEntry { Path = e.Str("path"), Mode = (int)(e.OptLong("mode") ?? 0), Owner = e.OptStr("owner"), Group = e.OptStr("group") })).ConfigureAwait(false);
                    return null;
                case "files.create_directories":
                    await f.CreateDirectoriesAsync(a.Objs("entries").Select(e => new CreateDirectoryEntry { Path = e.Str("path"), Mode = (int?)e.OptLong("mode"), Owner = e.OptStr("owner"), Group = e.OptStr("group") })).ConfigureAwait(false);
                    return null;
                case "files.replace_contents":
                    await f.ReplaceContentsAsync(Replacements(a)).ConfigureAwait(false);
                    return null;
                case "files.replace_contents_detailed":
                    return (await f.ReplaceContentsDetailedAsync(Replacements(a)).ConfigureAwait(false))
                        .Select(r => (object)new Dictionary<string, object> { { "path", r.Path }, { "replaced_count", r.ReplacedCount } }).ToList();
                case "files.search":
                    return (await f.SearchAsync(new SearchEntry { Path = a.Str("path"), Pattern = a.OptStr("pattern") }).ConfigureAwait(false)).Select(x => (object)EntryJson(x)).ToList();
                case "files.list_directory":
                    return (await f.ListDirectoryAsync(a.Str("path"), (int?)a.OptLong("depth")).ConfigureAwait(false)).Select(x => (object)EntryJson(x)).ToList();
                case "metrics.watch":
                {
                    var count = a.OptLong("count") ?? 1;
                    var samples = new List<object>();
                    var en = sb.Metrics.WatchMetricsAsync().GetAsyncEnumerator();
                    try
                    {
                        while (samples.Count < count && await en.MoveNextAsync().ConfigureAwait(false)) samples.Add(MetricsJson(en.Current));
                    }
                    finally
                    {
                        await en.DisposeAsync().ConfigureAwait(false);
                    }
                    return samples;
                }
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        // ------------------------------------------------------------------ PTY (PROTOCOL.md §2.8)

        private static OpenSandbox.Services.PtyStream Pty(A a)
        {
            OpenSandbox.Services.PtyStream p;
            if (!Ptys.TryGetValue(a.Str("handle"), out p)) throw new DriverError("driver_error", "no pty with handle " + a.Str("handle"));
            return p;
        }

        private static async Task<object> PtyOp(string op, A a)
        {
            switch (op)
            {
                case "pty.write":
                {
                    var bytes = Encoding.UTF8.GetBytes(a.Str("text"));
                    await Pty(a).WriteAsync(bytes, 0, bytes.Length).ConfigureAwait(false);
                    return null;
                }
                case "pty.resize":
                    await Pty(a).ResizeAsync((int)(a.OptLong("cols") ?? 0), (int)(a.OptLong("rows") ?? 0)).ConfigureAwait(false);
                    return null;
                case "pty.close":
                {
                    var p = Pty(a);
                    Ptys.Remove(a.Str("handle"));
                    var next = await p.DetachAsync().ConfigureAwait(false);
                    p.Dispose();
                    return new Dictionary<string, object> { { "next_offset", next } };
                }
                case "pty.read":
                {
                    var o = new OpenSandbox.Services.PtyReadOptions { Until = a.OptStr("until"), UntilExit = a.Bool("until_exit") };
                    var wait = a.OptLong("wait_ms");
                    if (wait.HasValue) o.Timeout = TimeSpan.FromMilliseconds(wait.Value);
                    var r = await Pty(a).ReadChunkAsync(o).ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "output", r.Text }, { "channel", r.Channel }, { "offset", r.Offset }, { "next_offset", r.NextOffset },
                        { "exit_code", r.ExitCode.HasValue ? (object)(long)r.ExitCode.Value : null }, { "closed", r.Closed },
                        { "close_code", r.CloseCode.HasValue ? (object)(long)r.CloseCode.Value : null },
                        { "timed_out", r.TimedOut }, { "done", r.Done },
                    };
                }
            }
            var sb = await GetSandbox(a).ConfigureAwait(false);
            switch (op)
            {
                case "pty.create":
                    return new Dictionary<string, object> { { "session_id", await sb.Pty.CreateSessionAsync(a.OptStr("cwd"), a.OptStr("command")).ConfigureAwait(false) } };
                case "pty.get":
                {
                    var st = await sb.Pty.GetSessionAsync(a.Str("session_id")).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "session_id", st.SessionId }, { "running", st.Running }, { "output_offset", st.OutputOffset } };
                }
                case "pty.delete":
                    await sb.Pty.DeleteSessionAsync(a.Str("session_id")).ConfigureAwait(false);
                    return null;
                case "pty.attach":
                {
                    var o = new OpenSandbox.Services.PtyAttachOptions { Since = a.OptLong("since"), Pipe = a.OptStr("mode") == "pipe", Takeover = a.Bool("takeover") };
                    var p = await sb.Pty.AttachAsync(a.Str("session_id"), o).ConfigureAwait(false);
                    var handle = "pty-" + Interlocked.Increment(ref _runSeq);
                    Ptys[handle] = p;
                    return new Dictionary<string, object> { { "handle", handle }, { "mode", p.Mode } };
                }
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        private static async Task<object> FollowLogs(Sandbox sb, A a)
        {
            var start = a.OptLong("cursor") ?? 0;
            var limit = a.OptLong("max_bytes");
            var content = new MemoryStream();
            object first = null;
            long expected = start;
            bool contiguous = true, ended = true;
            long chunks = 0;
            var en = sb.Pty.FollowLogsAsync(a.Str("id"), start).GetAsyncEnumerator();
            try
            {
                while (await en.MoveNextAsync().ConfigureAwait(false))
                {
                    var c = en.Current;
                    chunks++;
                    if (first == null) first = c.Offset;
                    contiguous = contiguous && c.Offset == expected;
                    expected = c.Offset + c.Data.Length;
                    content.Write(c.Data, 0, c.Data.Length);
                    if (limit.HasValue && content.Length >= limit.Value) { ended = false; break; }
                }
            }
            finally
            {
                await en.DisposeAsync().ConfigureAwait(false);
            }
            return new Dictionary<string, object>
            {
                { "content", Encoding.UTF8.GetString(content.ToArray()) }, { "first_offset", first }, { "cursor", expected },
                { "chunks", chunks }, { "contiguous", contiguous }, { "ended", ended },
            };
        }

        private static List<ContentReplaceEntry> Replacements(A a)
        {
            return a.Objs("entries").Select(e => new ContentReplaceEntry { Path = e.Str("path"), OldContent = e.Str("old_content"), NewContent = e.Str("new_content") }).ToList();
        }

        // ------------------------------------------------------------------ shapes (PROTOCOL.md §2.2)

        private static object Time(DateTime? t)
        {
            return t.HasValue ? t.Value.ToUniversalTime().ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'", CultureInfo.InvariantCulture) : null;
        }

        private static Dictionary<string, object> Info(SandboxInfo s)
        {
            return new Dictionary<string, object>
            {
                { "id", s.Id },
                { "status", new Dictionary<string, object> { { "state", s.Status.State }, { "reason", s.Status.Reason }, { "message", s.Status.Message }, { "last_transition_at", Time(s.Status.LastTransitionAt) } } },
                { "entrypoint", s.Entrypoint.Cast<object>().ToList() },
                { "expires_at", Time(s.ExpiresAt) },
                { "created_at", Time(s.CreatedAt) },
                { "image", s.Image == null ? null : new Dictionary<string, object> { { "uri", s.Image.Uri } } },
                { "snapshot_id", s.SnapshotId },
                { "metadata", s.Metadata.ToDictionary(kv => kv.Key, kv => (object)kv.Value) },
            };
        }

        private static Dictionary<string, object> Page(PaginationInfo p)
        {
            if (p == null) return null;
            return new Dictionary<string, object>
            {
                { "page", (long)p.Page }, { "page_size", (long)p.PageSize }, { "total_items", (long)p.TotalItems },
                { "total_pages", (long)p.TotalPages }, { "has_next_page", p.HasNextPage },
            };
        }

        private static Dictionary<string, object> Snapshot(SnapshotInfo s)
        {
            return new Dictionary<string, object>
            {
                { "id", s.Id }, { "sandbox_id", s.SandboxId }, { "name", s.Name },
                { "status", s.Status == null ? null : new Dictionary<string, object> { { "state", s.Status.State }, { "reason", s.Status.Reason }, { "message", s.Status.Message } } },
                { "created_at", Time(s.CreatedAt) },
            };
        }

        private static Dictionary<string, object> EndpointJson(Endpoint e)
        {
            return new Dictionary<string, object> { { "endpoint", e.EndpointAddress }, { "headers", e.Headers.ToDictionary(kv => kv.Key, kv => (object)kv.Value) } };
        }

        private static Dictionary<string, object> MetricsJson(SandboxMetrics m)
        {
            return new Dictionary<string, object>
            {
                { "cpu_count", (long)m.CpuCount }, { "cpu_used_percentage", m.CpuUsedPercentage },
                { "memory_total_in_mib", m.MemoryTotalMiB }, { "memory_used_in_mib", m.MemoryUsedMiB }, { "timestamp", m.Timestamp },
            };
        }

        private static Dictionary<string, object> Diag(DiagnosticContent d)
        {
            return new Dictionary<string, object>
            {
                { "sandbox_id", d.SandboxId }, { "kind", d.Kind }, { "scope", d.Scope }, { "delivery", d.Delivery },
                { "content_type", d.ContentType }, { "truncated", d.Truncated }, { "content", d.Content },
                { "content_url", d.ContentUrl }, { "content_length", d.ContentLength }, { "expires_at", Time(d.ExpiresAt) },
                { "warnings", d.Warnings.Cast<object>().ToList() },
            };
        }

        private static Dictionary<string, object> EntryJson(SandboxFileInfo e)
        {
            return new Dictionary<string, object>
            {
                { "path", e.Path }, { "type", e.Type }, { "mode", e.Mode.HasValue ? (object)(long)e.Mode.Value : null },
                { "owner", e.Owner }, { "group", e.Group }, { "size", e.Size },
                { "modified_at", Time(e.ModifiedAt) }, { "created_at", Time(e.CreatedAt) },
            };
        }

        private static Dictionary<string, object> Ctx(CodeContext c)
        {
            return new Dictionary<string, object> { { "id", c.Id }, { "language", c.Language } };
        }

        private static Dictionary<string, object> ExecutionJson(Execution e)
        {
            return new Dictionary<string, object>
            {
                { "id", e.Id },
                { "exit_code", e.ExitCode.HasValue ? (object)(long)e.ExitCode.Value : null },
                { "stdout", e.Logs.Stdout.Select(m => (object)m.Text).ToList() },
                { "stderr", e.Logs.Stderr.Select(m => (object)m.Text).ToList() },
                { "results", e.Results.Select(r => (object)new Dictionary<string, object> { { "text", r.Text } }).ToList() },
                { "error", e.Error == null ? null : new Dictionary<string, object> { { "name", e.Error.Name }, { "value", e.Error.Value }, { "traceback", e.Error.Traceback.Cast<object>().ToList() } } },
                { "complete", e.Complete == null ? null : new Dictionary<string, object> { { "execution_time_ms", e.Complete.ExecutionTimeMs } } },
                { "execution_count", e.ExecutionCount.HasValue ? (object)(long)e.ExecutionCount.Value : null },
            };
        }
    }
}
