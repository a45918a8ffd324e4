// The (1.1) areas through the package's public API: templates, the credential vault,
// lifecycle hooks and resource requests on create, isolated sessions and identity-scoped
// files. Results are the op layer's snake_case shapes (conformance/PROTOCOL.md).

using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using OpenSandbox;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Services;

namespace OpenSandbox.Conformance
{
    internal static partial class Program
    {
        private static readonly string[] Ops11 =
        {
            "manager.create_template", "manager.get_template", "manager.list_templates", "manager.delete_template",
            "credential_vault.create", "credential_vault.get", "credential_vault.patch", "credential_vault.delete",
            "credential_vault.list_credentials", "credential_vault.get_credential",
            "credential_vault.list_bindings", "credential_vault.get_binding",
            "isolation.capabilities", "isolation.create", "isolation.attach", "isolation.get", "isolation.list",
            "isolation.delete", "isolation.run", "isolation.start", "isolation.run_background",
            "isolation.run_status", "isolation.run_logs",
        };

        private static int? OptInt(A a, string k)
        {
            var v = a.OptLong(k);
            return v.HasValue ? (int?)(int)v.Value : null;
        }

        private static IReadOnlyList<string> Strs(A a, string k)
        {
            return a.StrList(k);
        }

        /// <summary>The 1.1 keys of sandbox.create.</summary>
        private static void CreateOptions11(A a, SandboxCreateOptions o)
        {
            o.ResourceRequests = a.StrMap("resource_requests");
            var cp = a.Obj("credential_proxy");
            if (cp != null) o.CredentialProxy = new CredentialProxyConfig { Enabled = cp.Bool("enabled") };
            var lc = a.Obj("lifecycle");
            if (lc != null)
            {
                var l = new SandboxLifecycle();
                var ps = lc.Obj("pre_start");
                if (ps != null) l.PreStart = new LifecycleHook { Command = Strs(ps, "command"), TimeoutSeconds = OptInt(ps, "timeout_seconds") };
                if (lc.Has("periodic"))
                    l.Periodic = lc.Objs("periodic").Select(p => new PeriodicLifecycleHook
                    {
                        Name = p.OptStr("name"), Schedule = p.OptStr("schedule"), Command = Strs(p, "command"), TimeoutSeconds = OptInt(p, "timeout_seconds"),
                    }).ToList();
                o.Lifecycle = l;
            }
            if (a.Has("volumes"))
                o.Volumes = a.Objs("volumes").Select(v =>
                {
                    var vol = new Volume { Name = v.OptStr("name"), MountPath = v.OptStr("mount_path"), SubPath = v.OptStr("sub_path") };
                    if (v.Has("read_only")) vol.ReadOnly = v.Bool("read_only");
                    var h = v.Obj("host");
                    if (h != null) vol.Host = new Host { Path = h.OptStr("path") };
                    var p = v.Obj("pvc");
                    if (p != null) vol.Pvc = new PVC { ClaimName = p.OptStr("claim_name") };
                    return vol;
                }).ToList();
        }

        private static async Task<Sandbox> CreateFromTemplate(A a)
        {
            var o = new SandboxCreateFromTemplateOptions
            {
                ConnectionConfig = Config(a),
                TemplateId = a.Str("template_id"),
                TimeoutSeconds = Secs(a, "timeout_s") ?? 0,
                Metadata = a.StrMap("metadata"),
                Extensions = a.StrMap("extensions"),
                SkipHealthCheck = a.Bool("skip_health_check"),
                ReadyTimeoutSeconds = Secs(a, "ready_timeout_s"),
            };
            var np = a.Obj("network_policy");
            if (np != null)
            {
                o.NetworkPolicy = new NetworkPolicy { Egress = Rules(np, "egress") };
                var da = np.OptStr("default_action");
                if (da != null) o.NetworkPolicy.DefaultAction = da == "allow" ? NetworkRuleAction.Allow : NetworkRuleAction.Deny;
            }
            return await Sandbox.CreateFromTemplateAsync(o).ConfigureAwait(false);
        }

        // ------------------------------------------------------------------ templates

        private static object TemplateJson(TemplateInfo t)
        {
            return new Dictionary<string, object>
            {
                { "template_id", t.TemplateId }, { "image", t.Image }, { "publish", t.Publish }, { "format", t.Format },
                { "status", new Dictionary<string, object> { { "phase", t.Status.Phase }, { "manifest_ref", t.Status.ManifestRef }, { "message", t.Status.Message } } },
                { "created_at", Time(t.CreatedAt) }, { "updated_at", Time(t.UpdatedAt) },
                { "resource_limits", StrMapJson(t.ResourceLimits) }, { "entrypoint", t.Entrypoint == null ? null : t.Entrypoint.Cast<object>().ToList() },
                { "env", StrMapJson(t.Env) }, { "metadata", StrMapJson(t.Metadata) },
                { "readiness", t.Readiness == null ? null : new Dictionary<string, object> { { "probe", t.Readiness.Probe }, { "warmup_seconds", t.Readiness.WarmupSeconds.HasValue ? (object)(long)t.Readiness.WarmupSeconds.Value : null } } },
            };
        }

        private static object StrMapJson(IReadOnlyDictionary<string, string> m)
        {
            return m == null ? null : m.ToDictionary(kv => kv.Key, kv => (object)kv.Value);
        }

        private static async Task<object> TemplateOp(string op, SandboxManager m, A a)
        {
            switch (op)
            {
                case "manager.create_template":
                {
                    var req = new CreateTemplateRequest
                    {
                        Image = a.OptStr("image"), Publish = a.OptStr("publish"), Entrypoint = a.StrList("entrypoint"),
                        Env = a.StrMap("env"), Metadata = a.StrMap("metadata"), ResourceLimits = a.StrMap("resource_limits"), Format = a.OptStr("format"),
                    };
                    var r = a.Obj("readiness");
                    if (r != null) req.Readiness = new TemplateReadiness { Probe = r.OptStr("probe"), WarmupSeconds = OptInt(r, "warmup_seconds") };
                    return TemplateJson(await m.CreateTemplateAsync(req).ConfigureAwait(false));
                }
                case "manager.get_template": return TemplateJson(await m.GetTemplateAsync(a.OptStr("template_id")).ConfigureAwait(false));
                case "manager.list_templates":
                {
                    var r = await m.ListTemplatesAsync(new TemplateFilter { Metadata = a.StrMap("metadata"), Page = OptInt(a, "page"), PageSize = OptInt(a, "page_size") }).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "template_infos", r.Items.Select(TemplateJson).ToList() }, { "pagination", Page(r.Pagination) } };
                }
                case "manager.delete_template": await m.DeleteTemplateAsync(a.OptStr("template_id")).ConfigureAwait(false); return null;
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        // ------------------------------------------------------------------ credential vault

        private static Credential CredentialOf(A c)
        {
            var s = c.Obj("source");
            return new Credential { Name = c.OptStr("name"), Source = s == null ? null : new InlineCredentialSource { Type = s.OptStr("type") ?? "inline", Value = s.OptStr("value") } };
        }

        private static CredentialBinding BindingOf(A b)
        {
            var m = b.Obj("match");
            var au = b.Obj("auth");
            return new CredentialBinding
            {
                Name = b.OptStr("name"),
                Match = m == null ? null : new CredentialMatch
                {
                    Hosts = m.StrList("hosts"), Schemes = m.StrList("schemes"), Methods = m.StrList("methods"), Paths = m.StrList("paths"),
                    Ports = m.Raw("ports") is List<object> ? ((List<object>)m.Raw("ports")).Select(x => (int)(Json.AsLong(x) ?? 0)).ToList() : null,
                },
                Auth = au == null ? null : new CredentialAuth
                {
                    Type = au.OptStr("type"), Credential = au.OptStr("credential"), Name = au.OptStr("name"),
                    Headers = au.Has("headers") ? au.Objs("headers").Select(h => new CustomHeaderEntry { Name = h.OptStr("name"), Credential = h.OptStr("credential") }).ToList() : null,
                    Substitutions = au.Has("substitutions") ? au.Objs("substitutions").Select(s => new CredentialSubstitution { Credential = s.OptStr("credential"), Placeholder = s.OptStr("placeholder"), In = s.StrList("in") }).ToList() : null,
                },
            };
        }

        private static object CredMetaJson(CredentialMetadata c)
        {
            return new Dictionary<string, object> { { "name", c.Name }, { "source_type", c.SourceType }, { "revision", (long)c.Revision } };
        }

        private static object BindingMetaJson(CredentialBindingMetadata b)
        {
            Func<IReadOnlyList<string>, object> l = x => x == null ? null : x.Cast<object>().ToList();
            return new Dictionary<string, object>
            {
                { "name", b.Name }, { "revision", (long)b.Revision },
                { "match", b.Match == null ? null : new Dictionary<string, object> { { "hosts", l(b.Match.Hosts) }, { "schemes", l(b.Match.Schemes) }, { "methods", l(b.Match.Methods) }, { "paths", l(b.Match.Paths) } } },
                { "auth", b.Auth == null ? null : new Dictionary<string, object> { { "type", b.Auth.Type }, { "name", b.Auth.Name } } },
            };
        }

        private static object VaultJson(CredentialVaultState s)
        {
            return new Dictionary<string, object>
            {
                { "revision", (long)s.Revision },
                { "credentials", s.Credentials.Select(CredMetaJson).ToList() },
                { "bindings", s.Bindings.Select(BindingMetaJson).ToList() },
            };
        }

        private static async Task<object> VaultOp(string op, A a)
        {
            var v = (await GetSandbox(a).ConfigureAwait(false)).CredentialVault;
            switch (op)
            {
                case "credential_vault.create":
                    return VaultJson(await v.CreateAsync(a.Objs("credentials").Select(CredentialOf).ToList(), a.Objs("bindings").Select(BindingOf).ToList()).ConfigureAwait(false));
                case "credential_vault.get": return VaultJson(await v.GetAsync().ConfigureAwait(false));
                case "credential_vault.patch":
                {
                    var req = new CredentialVaultPatchRequest { ExpectedRevision = OptInt(a, "expected_revision") };
                    var c = a.Obj("credentials");
                    if (c != null)
                        req.Credentials = new CredentialMutationSet
                        {
                            Add = c.Has("add") ? c.Objs("add").Select(CredentialOf).ToList() : null,
                            Replace = c.Has("replace") ? c.Objs("replace").Select(CredentialOf).ToList() : null,
                            Delete = c.StrList("delete"),
                        };
                    var b = a.Obj("bindings");
                    if (b != null)
                        req.Bindings = new CredentialBindingMutationSet
                        {
                            Add = b.Has("add") ? b.Objs("add").Select(BindingOf).ToList() : null,
                            Replace = b.Has("replace") ? b.Objs("replace").Select(BindingOf).ToList() : null,
                            Delete = b.StrList("delete"),
                        };
                    return VaultJson(await v.PatchAsync(req).ConfigureAwait(false));
                }
                case "credential_vault.delete": await v.DeleteAsync().ConfigureAwait(false); return null;
                case "credential_vault.list_credentials": return (await v.ListCredentialsAsync().ConfigureAwait(false)).Select(CredMetaJson).ToList();
                case "credential_vault.get_credential": return CredMetaJson(await v.GetCredentialAsync(a.OptStr("name")).ConfigureAwait(false));
                case "credential_vault.list_bindings": return (await v.ListBindingsAsync().ConfigureAwait(false)).Select(BindingMetaJson).ToList();
                case "credential_vault.get_binding": return BindingMetaJson(await v.GetBindingAsync(a.OptStr("name")).ConfigureAwait(false));
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }

        // ------------------------------------------------------------------ isolation and scoped files

        private static object OffsetTime(DateTimeOffset? t)
        {
            return Time(t.HasValue ? (DateTime?)t.Value.UtcDateTime : null);
        }

        private static object IntOrNull(int? v) { return v.HasValue ? (object)(long)v.Value : null; }

        private static object SessionInfoJson(IsolatedSessionInfo i)
        {
            return new Dictionary<string, object> { { "session_id", i.SessionId }, { "created_at", OffsetTime(i.CreatedAt) } };
        }

        /// <summary>The file API a files.* op runs on: the sandbox's, or one scoped to an identity or an isolated session.</summary>
        private static async Task<ISandboxFiles> FileTarget(Sandbox sb, A a)
        {
            var id = a.Obj("identity");
            if (id != null)
            {
                var uid = id.OptLong("uid") ?? -1;
                var gid = id.OptLong("gid") ?? -1;
                // The public API takes uint: what does not fit is the SDK's refusal too.
                if (uid < 0 || gid < 0 || uid > uint.MaxValue || gid > uint.MaxValue)
                    throw new OpenSandbox.Core.InvalidArgumentException("uid and gid must be in 0..4294967294");
                return ((IIdentitySandboxFiles)sb.Files).WithIdentity((uint)uid, (uint)gid);
            }
            var iso = a.OptStr("isolated_session");
            if (iso != null) return (await sb.Isolation.AttachAsync(iso).ConfigureAwait(false)).Files;
            return sb.Files;
        }

        private static async Task<object> IsolationOp(string op, A a)
        {
            var sb = await GetSandbox(a).ConfigureAwait(false);
            var iso = sb.Isolation;
            switch (op)
            {
                case "isolation.capabilities":
                {
                    var c = await iso.CapabilitiesAsync().ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "available", c.Available }, { "isolator", c.Isolator }, { "version", c.Version }, { "message", c.Message },
                        { "commit_supported", c.CommitSupported }, { "diff_supported", c.DiffSupported },
                        { "setpriv_available", c.SetprivAvailable }, { "userns_available", c.UsernsAvailable },
                    };
                }
                case "isolation.create":
                {
                    var w = a.Obj("workspace");
                    var ep = a.Obj("env_passthrough");
                    var req = new CreateIsolatedSessionRequest(
                        Workspace: w == null ? null : new IsolatedWorkspaceSpec(w.OptStr("path"), w.OptStr("mode")),
                        Profile: a.OptStr("profile"),
                        ExtraWritable: a.StrList("extra_writable"),
                        Binds: a.Has("binds") ? a.Objs("binds").Select(b => new BindMount(b.OptStr("source"), b.OptStr("dest"), b.Has("readonly") ? (bool?)b.Bool("readonly") : null)).ToList() : null,
                        ShareNet: a.Has("share_net") && a.Raw("share_net") != null ? (bool?)a.Bool("share_net") : null,
                        EnvPassthrough: ep == null ? null : new EnvPassthroughSpec(ep.OptStr("mode") ?? "deny", ep.StrList("keys")),
                        Uid: OptInt(a, "uid"),
                        Gid: OptInt(a, "gid"),
                        UidMode: a.OptStr("uid_mode"),
                        IdleTimeoutSeconds: OptInt(a, "idle_timeout_seconds"),
                        Overlays: a.Has("overlays") ? a.Objs("overlays").Select(o => new IsolatedOverlaySpec(o.OptStr("path"), o.OptStr("mode"), o.Has("persist") ? (bool?)o.Bool("persist") : null)).ToList() : null);
                    return SessionInfoJson((await iso.CreateAsync(req).ConfigureAwait(false)).Info);
                }
                case "isolation.list":
                    return (await iso.ListAsync().ConfigureAwait(false)).Select(s => (object)new Dictionary<string, object>
                    {
                        { "session_id", s.SessionId }, { "status", s.Status }, { "created_at", OffsetTime(s.CreatedAt) },
                        { "last_run_at", OffsetTime(s.LastRunAt) }, { "idle_remaining_seconds", IntOrNull(s.IdleRemainingSeconds) },
                    }).ToList();
            }
            var session = await iso.AttachAsync(a.Str("session_id")).ConfigureAwait(false);
            switch (op)
            {
                case "isolation.attach": return SessionInfoJson(session.Info);
                case "isolation.get":
                {
                    var st = await session.GetAsync().ConfigureAwait(false);
                    var d = st.Params.ToDictionary(kv => kv.Key, kv => kv.Value);
                    d["status"] = st.Status;
                    d["created_at"] = OffsetTime(st.CreatedAt);
                    d["last_run_at"] = OffsetTime(st.LastRunAt);
                    d["idle_remaining_seconds"] = IntOrNull(st.IdleRemainingSeconds);
                    return d;
                }
                case "isolation.delete": await session.DeleteAsync().ConfigureAwait(false); return null;
                case "isolation.run":
                case "isolation.start":
                {
                    var opts = new IsolatedRunOpts(a.StrMap("envs"), Secs(a, "timeout_s"));
                    var code = a.Str("code");
                    if (op == "isolation.start")
                    {
                        var srec = new Recorder(a.Bool("handlers"), false) { Skip = a.Bool("skip_accumulation") };
                        return await Start(srec, (h, ct) => session.RunAsync(code, opts, h, ct)).ConfigureAwait(false);
                    }
                    var rec = new Recorder(a.Bool("handlers"), false) { Skip = a.Bool("skip_accumulation") };
                    var useHandlers = a.Bool("handlers") || a.Bool("skip_accumulation");
                    return await Finish(session.RunAsync(code, opts, rec.HandlersIf(useHandlers)), rec).ConfigureAwait(false);
                }
                case "isolation.run_background":
                {
                    var r = await session.RunBackgroundAsync(a.Str("code"), new IsolatedRunOpts(a.StrMap("envs"), Secs(a, "timeout_s"))).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "session_id", r.SessionId }, { "run_id", r.RunId }, { "started_at", OffsetTime(r.StartedAt) } };
                }
                case "isolation.run_status":
                {
                    var r = await session.GetRunStatusAsync(a.Str("run_id")).ConfigureAwait(false);
                    return new Dictionary<string, object>
                    {
                        { "session_id", r.SessionId }, { "run_id", r.RunId }, { "running", r.Running }, { "exit_code", IntOrNull(r.ExitCode) },
                        { "error", r.Error }, { "started_at", OffsetTime(r.StartedAt) }, { "finished_at", OffsetTime(r.FinishedAt) },
                    };
                }
                case "isolation.run_logs":
                {
                    var r = await session.GetRunLogsAsync(a.Str("run_id"), a.OptLong("cursor") ?? 0).ConfigureAwait(false);
                    return new Dictionary<string, object> { { "text", r.Text }, { "cursor", r.Cursor } };
                }
            }
            throw new DriverError("unsupported_op", "unsupported op " + op);
        }
    }
}
