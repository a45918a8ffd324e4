// (1.1) Isolated sessions (isolation.* ops): nested sandboxes inside a sandbox. The official
// C# models are positional records; these are classes with the same constructor parameter
// names (so `new CreateIsolatedSessionRequest(Workspace: ..., Profile: ...)` compiles against
// both) and the same property names.

using System;
using System.Collections.Generic;
using OpenSandbox.Core;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    public class IsolatedWorkspaceSpec
    {
        public IsolatedWorkspaceSpec(string Path, string Mode = null)
        {
            this.Path = Path;
            this.Mode = Mode;
        }

        public string Path { get; set; }
        public string Mode { get; set; }
    }

    public class EnvPassthroughSpec
    {
        public EnvPassthroughSpec(string Mode = "deny", List<string> Keys = null)
        {
            this.Mode = Mode;
            this.Keys = Keys;
        }

        public string Mode { get; set; }
        public List<string> Keys { get; set; }
    }

    public class BindMount
    {
        public BindMount(string Source, string Dest = null, bool? ReadOnly = null)
        {
            this.Source = Source;
            this.Dest = Dest;
            this.ReadOnly = ReadOnly;
        }

        public string Source { get; set; }
        public string Dest { get; set; }
        public bool? ReadOnly { get; set; }
    }

    /// <summary>One overlay of a session (extension: the 1.1 wire field, absent from the C# record).</summary>
    public class IsolatedOverlaySpec
    {
        public IsolatedOverlaySpec(string Path, string Mode = null, bool? Persist = null)
        {
            this.Path = Path;
            this.Mode = Mode;
            this.Persist = Persist;
        }

        public string Path { get; set; }
        public string Mode { get; set; }
        public bool? Persist { get; set; }
    }

    public class CreateIsolatedSessionRequest
    {
        public CreateIsolatedSessionRequest(
            IsolatedWorkspaceSpec Workspace,
            string Profile = null,
            List<string> ExtraWritable = null,
            List<BindMount> Binds = null,
            bool? ShareNet = null,
            EnvPassthroughSpec EnvPassthrough = null,
            int? Uid = null,
            int? Gid = null,
            string UidMode = null,
            int? IdleTimeoutSeconds = null,
            List<IsolatedOverlaySpec> Overlays = null)
        {
            this.Workspace = Workspace;
            this.Profile = Profile;
            this.ExtraWritable = ExtraWritable;
            this.Binds = Binds;
            this.ShareNet = ShareNet;
            this.EnvPassthrough = EnvPassthrough;
            this.Uid = Uid;
            this.Gid = Gid;
            this.UidMode = UidMode;
            this.IdleTimeoutSeconds = IdleTimeoutSeconds;
            this.Overlays = Overlays;
        }

        public IsolatedWorkspaceSpec Workspace { get; set; }
        public string Profile { get; set; }
        public List<string> ExtraWritable { get; set; }
        public List<BindMount> Binds { get; set; }
        public bool? ShareNet { get; set; }
        public EnvPassthroughSpec EnvPassthrough { get; set; }
        public int? Uid { get; set; }
        public int? Gid { get; set; }
        public string UidMode { get; set; }
        public int? IdleTimeoutSeconds { get; set; }
        /// <summary>Extension (1.1 wire field).</summary>
        public List<IsolatedOverlaySpec> Overlays { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            if (Workspace == null && (Overlays == null || Overlays.Count == 0))
                throw new InvalidArgumentException("CreateIsolatedSessionRequest needs a Workspace (or Overlays)");
            if (Uid.HasValue && Uid.Value < 0) throw new InvalidArgumentException("Uid must not be negative");
            if (Gid.HasValue && Gid.Value < 0) throw new InvalidArgumentException("Gid must not be negative");
            if (IdleTimeoutSeconds.HasValue && IdleTimeoutSeconds.Value < 0) throw new InvalidArgumentException("IdleTimeoutSeconds must not be negative");
            var o = Args.Of("profile", Profile, "share_net", ShareNet, "uid", Uid, "gid", Gid, "uid_mode", UidMode, "idle_timeout_seconds", IdleTimeoutSeconds);
            if (Workspace != null)
            {
                if (string.IsNullOrEmpty(Workspace.Path)) throw new InvalidArgumentException("Workspace.Path is required");
                o["workspace"] = Args.Of("path", Workspace.Path, "mode", Workspace.Mode);
            }
            if (Overlays != null)
            {
                var l = new List<object>();
                foreach (var ov in Overlays) l.Add(Args.Of("path", ov.Path, "mode", ov.Mode, "persist", ov.Persist));
                o["overlays"] = l;
            }
            if (ExtraWritable != null) o["extra_writable"] = Args.List(ExtraWritable);
            if (Binds != null)
            {
                var l = new List<object>();
                foreach (var b in Binds)
                {
                    if (b == null || string.IsNullOrEmpty(b.Source)) throw new InvalidArgumentException("every BindMount needs a Source");
                    l.Add(Args.Of("source", b.Source, "dest", b.Dest, "readonly", b.ReadOnly));
                }
                o["binds"] = l;
            }
            if (EnvPassthrough != null)
                o["env_passthrough"] = Args.Of("mode", EnvPassthrough.Mode, "keys", EnvPassthrough.Keys == null ? null : Args.List(EnvPassthrough.Keys));
            return o;
        }
    }

    public class IsolatedSessionInfo
    {
        public IsolatedSessionInfo(string SessionId, DateTimeOffset? CreatedAt = null)
        {
            this.SessionId = SessionId;
            this.CreatedAt = CreatedAt;
        }

        public string SessionId { get; set; }
        public DateTimeOffset? CreatedAt { get; set; }

        internal static IsolatedSessionInfo FromJson(object j)
        {
            return new IsolatedSessionInfo(Json.Str(j, "sessionId"), IsolatedJson.Time(j, "createdAt"));
        }
    }

    public class IsolatedSessionState
    {
        public IsolatedSessionState(string Status, DateTimeOffset? CreatedAt = null, DateTimeOffset? LastRunAt = null, int? IdleRemainingSeconds = null)
        {
            this.Status = Status;
            this.CreatedAt = CreatedAt;
            this.LastRunAt = LastRunAt;
            this.IdleRemainingSeconds = IdleRemainingSeconds;
        }

        public string Status { get; set; }
        public DateTimeOffset? CreatedAt { get; set; }
        public DateTimeOffset? LastRunAt { get; set; }
        public int? IdleRemainingSeconds { get; set; }
        /// <summary>Extension: the session's parameters as the server reports them (workspace, overlays, profile, share_net, uid_mode, ...), snake_case keys.</summary>
        public IReadOnlyDictionary<string, object> Params { get; set; }

        internal static IsolatedSessionState FromJson(object j)
        {
            var s = new IsolatedSessionState(Json.Str(j, "status"), IsolatedJson.Time(j, "createdAt"), IsolatedJson.Time(j, "lastRunAt"), IsolatedJson.Int(j, "idleRemainingSeconds"));
            var p = new Dictionary<string, object>();
            var o = Json.Obj(j);
            if (o != null)
                foreach (var kv in o)
                    if (kv.Key != "status" && kv.Key != "created_at" && kv.Key != "last_run_at" && kv.Key != "idle_remaining_seconds") p[kv.Key] = kv.Value;
            s.Params = p;
            return s;
        }
    }

    public class IsolatedSessionSummary
    {
        public IsolatedSessionSummary(string SessionId, string Status, DateTimeOffset? CreatedAt = null, DateTimeOffset? LastRunAt = null, int? IdleRemainingSeconds = null)
        {
            this.SessionId = SessionId;
            this.Status = Status;
            this.CreatedAt = CreatedAt;
            this.LastRunAt = LastRunAt;
            this.IdleRemainingSeconds = IdleRemainingSeconds;
        }

        public string SessionId { get; set; }
        public string Status { get; set; }
        public DateTimeOffset? CreatedAt { get; set; }
        public DateTimeOffset? LastRunAt { get; set; }
        public int? IdleRemainingSeconds { get; set; }

        internal static IsolatedSessionSummary FromJson(object j)
        {
            return new IsolatedSessionSummary(Json.Str(j, "sessionId"), Json.Str(j, "status"), IsolatedJson.Time(j, "createdAt"), IsolatedJson.Time(j, "lastRunAt"), IsolatedJson.Int(j, "idleRemainingSeconds"));
        }
    }

    public class IsolatedRunOpts
    {
        public IsolatedRunOpts(Dictionary<string, string> Envs = null, int? TimeoutSeconds = null)
        {
            this.Envs = Envs;
            this.TimeoutSeconds = TimeoutSeconds;
        }

        public Dictionary<string, string> Envs { get; set; }
        public int? TimeoutSeconds { get; set; }
    }

    public class IsolatedCapabilities
    {
        public IsolatedCapabilities(bool Available = false, string Isolator = null, string Version = null, string Message = null, bool CommitSupported = false, bool DiffSupported = false)
        {
            this.Available = Available;
            this.Isolator = Isolator;
            this.Version = Version;
            this.Message = Message;
            this.CommitSupported = CommitSupported;
            this.DiffSupported = DiffSupported;
        }

        public bool Available { get; set; }
        public string Isolator { get; set; }
        public string Version { get; set; }
        public string Message { get; set; }
        public bool CommitSupported { get; set; }
        public bool DiffSupported { get; set; }
        /// <summary>Extension (1.1 wire field).</summary>
        public bool? SetprivAvailable { get; set; }
        /// <summary>Extension (1.1 wire field).</summary>
        public bool? UsernsAvailable { get; set; }

        internal static IsolatedCapabilities FromJson(object j)
        {
            return new IsolatedCapabilities(Json.Bool(j, "available") ?? false, Json.Str(j, "isolator"), Json.Str(j, "version"), Json.Str(j, "message"),
                Json.Bool(j, "commitSupported") ?? false, Json.Bool(j, "diffSupported") ?? false)
            {
                SetprivAvailable = Json.Bool(j, "setprivAvailable"),
                UsernsAvailable = Json.Bool(j, "usernsAvailable"),
            };
        }
    }

    /// <summary>A background run of an isolated session (extension, as Python's and Go's run_background).</summary>
    public class IsolatedBackgroundRun
    {
        public string SessionId { get; set; }
        public string RunId { get; set; }
        public DateTimeOffset? StartedAt { get; set; }

        internal static IsolatedBackgroundRun FromJson(object j)
        {
            return new IsolatedBackgroundRun { SessionId = Json.Str(j, "sessionId"), RunId = Json.Str(j, "runId"), StartedAt = IsolatedJson.Time(j, "startedAt") };
        }
    }

    /// <summary>Status of a background run (extension).</summary>
    public class IsolatedRunStatus
    {
        public string SessionId { get; set; }
        public string RunId { get; set; }
        public bool Running { get; set; }
        public int? ExitCode { get; set; }
        public string Error { get; set; }
        public DateTimeOffset? StartedAt { get; set; }
        public DateTimeOffset? FinishedAt { get; set; }

        internal static IsolatedRunStatus FromJson(object j)
        {
            return new IsolatedRunStatus
            {
                SessionId = Json.Str(j, "sessionId"),
                RunId = Json.Str(j, "runId"),
                Running = Json.Bool(j, "running") ?? false,
                ExitCode = IsolatedJson.Int(j, "exitCode"),
                Error = Json.Str(j, "error"),
                StartedAt = IsolatedJson.Time(j, "startedAt"),
                FinishedAt = IsolatedJson.Time(j, "finishedAt"),
            };
        }
    }

    /// <summary>Output of a background run from a cursor (extension).</summary>
    public class IsolatedRunLogs
    {
        public string Text { get; set; }
        public long Cursor { get; set; }
    }

    internal static class IsolatedJson
    {
        public static DateTimeOffset? Time(object j, string k)
        {
            var t = Json.Time(j, k);
            if (!t.HasValue) return null;
            return new DateTimeOffset(DateTime.SpecifyKind(t.Value.Kind == DateTimeKind.Local ? t.Value.ToUniversalTime() : t.Value, DateTimeKind.Utc));
        }

        public static int? Int(object j, string k)
        {
            var v = Json.Long(j, k);
            return v.HasValue ? (int?)(int)v.Value : null;
        }
    }
}
