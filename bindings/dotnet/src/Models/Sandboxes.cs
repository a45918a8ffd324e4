using System;
using System.Collections.Generic;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    public class ImageAuth
    {
        public string Username { get; set; }
        public string Password { get; set; }
        public string Token { get; set; }
    }

    public class ImageSpec
    {
        public string Uri { get; set; }
        public ImageAuth Auth { get; set; }
    }

    public enum NetworkRuleAction
    {
        Allow,
        Deny,
    }

    public class NetworkRule
    {
        public NetworkRuleAction Action { get; set; }
        public string Target { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            return new Dictionary<string, object> { { "action", ModelJson.ActionName(Action) }, { "target", Target } };
        }
    }

    public class NetworkPolicy
    {
        public NetworkRuleAction? DefaultAction { get; set; }
        public List<NetworkRule> Egress { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            if (DefaultAction.HasValue) o["default_action"] = ModelJson.ActionName(DefaultAction.Value);
            var rules = new List<object>();
            if (Egress != null) foreach (var r in Egress) rules.Add(r.ToJson());
            o["egress"] = rules;
            return o;
        }

        internal static NetworkPolicy FromJson(object j)
        {
            if (j == null) return null;
            var p = new NetworkPolicy { Egress = new List<NetworkRule>() };
            var d = Json.Str(j, "defaultAction") ?? Json.Str(j, "default_action");
            if (d != null) p.DefaultAction = ModelJson.ParseAction(d);
            var eg = Json.Arr(Json.Get(j, "egress"));
            if (eg != null)
                foreach (var r in eg)
                    p.Egress.Add(new NetworkRule { Action = ModelJson.ParseAction(Json.Str(r, "action")), Target = Json.Str(r, "target") });
            return p;
        }
    }

    public class SandboxStatus
    {
        public string State { get; set; }
        public string Reason { get; set; }
        public string Message { get; set; }
        public DateTime? LastTransitionAt { get; set; }
    }

    public class SandboxInfo
    {
        public string Id { get; set; }
        public ImageSpec Image { get; set; }
        public string SnapshotId { get; set; }
        public IReadOnlyList<string> Entrypoint { get; set; }
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        public SandboxStatus Status { get; set; }
        public DateTime CreatedAt { get; set; }
        /// <summary>Null for a sandbox with manual cleanup.</summary>
        public DateTime? ExpiresAt { get; set; }

        internal static SandboxInfo FromJson(object j)
        {
            if (j == null) return null;
            var info = new SandboxInfo
            {
                Id = Json.Str(j, "id"),
                SnapshotId = Json.Str(j, "snapshotId"),
                Entrypoint = Json.StrList(j, "entrypoint") ?? new List<string>(),
                Metadata = Json.StrMap(j, "metadata") ?? new Dictionary<string, string>(),
                CreatedAt = Json.Time(j, "createdAt") ?? default(DateTime),
                ExpiresAt = Json.Time(j, "expiresAt"),
            };
            var img = Json.Get(j, "image");
            if (img != null) info.Image = new ImageSpec { Uri = Json.Str(img, "uri") };
            var st = Json.Get(j, "status");
            info.Status = new SandboxStatus
            {
                State = Json.Str(st, "state"),
                Reason = Json.Str(st, "reason"),
                Message = Json.Str(st, "message"),
                LastTransitionAt = Json.Time(st, "lastTransitionAt"),
            };
            return info;
        }
    }

    public class PaginationInfo
    {
        public int Page { get; set; }
        public int PageSize { get; set; }
        public int TotalItems { get; set; }
        public int TotalPages { get; set; }
        public bool HasNextPage { get; set; }

        internal static PaginationInfo FromJson(object j)
        {
            if (j == null) return null;
            return new PaginationInfo
            {
                Page = (int)(Json.Long(j, "page") ?? 0),
                PageSize = (int)(Json.Long(j, "pageSize") ?? 0),
                TotalItems = (int)(Json.Long(j, "totalItems") ?? 0),
                TotalPages = (int)(Json.Long(j, "totalPages") ?? 0),
                HasNextPage = Json.Bool(j, "hasNextPage") ?? false,
            };
        }
    }

    public class ListSandboxesResponse
    {
        public IReadOnlyList<SandboxInfo> Items { get; set; }
        public PaginationInfo Pagination { get; set; }
    }

    public class RenewSandboxExpirationResponse
    {
        public DateTime? ExpiresAt { get; set; }
    }

    /// <summary>An endpoint of a sandbox port: address without scheme plus the headers to send to it.</summary>
    public class Endpoint
    {
        public string EndpointAddress { get; set; }
        public IReadOnlyDictionary<string, string> Headers { get; set; }
        /// <summary>(1.1) What the server's <c>OPEN-SANDBOX-ORIGIN</c> header said backs the sandbox.</summary>
        public SandboxOrigin Origin { get; set; }

        internal static Endpoint FromJson(object j)
        {
            return new Endpoint
            {
                EndpointAddress = Json.Str(j, "endpoint"),
                Headers = Json.StrMap(j, "headers") ?? new Dictionary<string, string>(),
                Origin = SandboxOrigins.Parse(Json.Str(j, "origin")),
            };
        }
    }

    /// <summary>
    /// (1.1) What backs a sandbox. <see cref="Template"/>: created from a template, or reported
    /// as such by the server's <c>OPEN-SANDBOX-ORIGIN</c> header; such a sandbox has no egress
    /// sidecar (its policy calls go to the lifecycle server) and no credential vault.
    /// Anything else, including a value a newer server may send, is <see cref="Unknown"/>.
    /// </summary>
    public enum SandboxOrigin
    {
        Unknown,
        Template,
    }

    internal static class SandboxOrigins
    {
        internal static SandboxOrigin Parse(string value)
        {
            return value == "template" ? SandboxOrigin.Template : SandboxOrigin.Unknown;
        }
    }

    public static class SandboxStates
    {
        public const string Creating = "Creating";
        public const string Pending = "Pending";
        public const string Running = "Running";
        public const string Pausing = "Pausing";
        public const string Paused = "Paused";
        public const string Resuming = "Resuming";
        public const string Deleting = "Deleting";
        public const string Deleted = "Deleted";
        public const string Terminated = "Terminated";
        public const string Failed = "Failed";
        public const string Error = "Error";
    }

    public class PlatformSpec
    {
        public string Os { get; set; }
        public string Arch { get; set; }
    }

    public class Host
    {
        public string Path { get; set; }
    }

    public class PVC
    {
        public string ClaimName { get; set; }
        /// <summary>Create the volume when it does not exist (server default true).</summary>
        public bool? CreateIfNotExists { get; set; }
        /// <summary>Remove an auto-created volume when the sandbox is deleted.</summary>
        public bool? DeleteOnSandboxTermination { get; set; }
        /// <summary>Kubernetes StorageClass of an auto-created PVC (ignored by Docker).</summary>
        public string StorageClass { get; set; }
        /// <summary>Size of an auto-created PVC, e.g. "1Gi" (ignored by Docker).</summary>
        public string Storage { get; set; }
        /// <summary>Access modes of an auto-created PVC, e.g. "ReadWriteOnce" (ignored by Docker).</summary>
        public IReadOnlyList<string> AccessModes { get; set; }
    }

    /// <summary>Alibaba Cloud OSS mounted through ossfs.</summary>
    public class OSSFS
    {
        public string Bucket { get; set; }
        public string Endpoint { get; set; }
        public string AccessKeyId { get; set; }
        public string AccessKeySecret { get; set; }
        /// <summary>ossfs major version (default "2.0").</summary>
        public string Version { get; set; } = "2.0";
        public IReadOnlyList<string> Options { get; set; }
    }

    public class Volume
    {
        public string Name { get; set; }
        public Host Host { get; set; }
        public PVC Pvc { get; set; }
        public OSSFS Ossfs { get; set; }
        public string MountPath { get; set; }
        public bool? ReadOnly { get; set; }
        public string SubPath { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            // The op layer's volume keys (bindings/common/README.md §1).
            if (string.IsNullOrEmpty(Name)) throw new Core.InvalidArgumentException("Volume.Name is required");
            if (string.IsNullOrEmpty(MountPath)) throw new Core.InvalidArgumentException("Volume.MountPath is required (volume " + Name + ")");
            var backends = (Host != null ? 1 : 0) + (Pvc != null ? 1 : 0) + (Ossfs != null ? 1 : 0);
            if (backends != 1) throw new Core.InvalidArgumentException("volume " + Name + " needs exactly one of Host, Pvc and Ossfs");
            var o = new Dictionary<string, object> { { "name", Name }, { "mount_path", MountPath } };
            if (Host != null)
            {
                var hp = Host.Path ?? "";
                var abs = hp.StartsWith("/", StringComparison.Ordinal) || (hp.Length >= 3 && char.IsLetter(hp[0]) && hp[1] == ':' && (hp[2] == '\\' || hp[2] == '/'));
                if (!abs) throw new Core.InvalidArgumentException("Host path must be an absolute path starting with '/' or a Windows drive letter (e.g. 'C:\\' or 'D:/')");
                o["host"] = new Dictionary<string, object> { { "path", Host.Path } };
            }
            if (Pvc != null)
            {
                if (string.IsNullOrEmpty(Pvc.ClaimName)) throw new Core.InvalidArgumentException("Pvc.ClaimName is required (volume " + Name + ")");
                o["pvc"] = Internal.Args.Of("claim_name", Pvc.ClaimName, "create_if_not_exists", Pvc.CreateIfNotExists,
                    "delete_on_sandbox_termination", Pvc.DeleteOnSandboxTermination, "storage_class", Pvc.StorageClass, "storage", Pvc.Storage,
                    "access_modes", Pvc.AccessModes == null ? null : Internal.Args.List(Pvc.AccessModes));
            }
            if (Ossfs != null)
            {
                if (string.IsNullOrEmpty(Ossfs.Bucket) || string.IsNullOrEmpty(Ossfs.Endpoint) || Ossfs.AccessKeyId == null || Ossfs.AccessKeySecret == null)
                    throw new Core.InvalidArgumentException("Ossfs needs Bucket, Endpoint, AccessKeyId and AccessKeySecret (volume " + Name + ")");
                o["ossfs"] = Internal.Args.Of("bucket", Ossfs.Bucket, "endpoint", Ossfs.Endpoint, "access_key_id", Ossfs.AccessKeyId,
                    "access_key_secret", Ossfs.AccessKeySecret, "version", Ossfs.Version,
                    "options", Ossfs.Options == null ? null : Internal.Args.List(Ossfs.Options));
            }
            if (ReadOnly.HasValue) o["read_only"] = ReadOnly.Value;
            if (SubPath != null) o["sub_path"] = SubPath;
            return o;
        }
    }

    public class SnapshotStatus
    {
        public string State { get; set; }
        public string Reason { get; set; }
        public string Message { get; set; }
    }

    public class SnapshotInfo
    {
        public string Id { get; set; }
        public string SandboxId { get; set; }
        public string Name { get; set; }
        public SnapshotStatus Status { get; set; }
        public DateTime? CreatedAt { get; set; }

        internal static SnapshotInfo FromJson(object j)
        {
            if (j == null) return null;
            var st = Json.Get(j, "status");
            return new SnapshotInfo
            {
                Id = Json.Str(j, "id"),
                SandboxId = Json.Str(j, "sandboxId"),
                Name = Json.Str(j, "name"),
                CreatedAt = Json.Time(j, "createdAt"),
                Status = st == null ? null : new SnapshotStatus
                {
                    State = Json.Str(st, "state"),
                    Reason = Json.Str(st, "reason"),
                    Message = Json.Str(st, "message"),
                },
            };
        }
    }

    public class ListSnapshotsResponse
    {
        public IReadOnlyList<SnapshotInfo> Items { get; set; }
        public PaginationInfo Pagination { get; set; }
    }

    public class SnapshotFilter
    {
        public string SandboxId { get; set; }
        public IReadOnlyList<string> States { get; set; }
        public int? Page { get; set; }
        public int? PageSize { get; set; }
    }

    /// <summary>Server diagnostics (logs/events) of a sandbox. Not in the official C# SDK: an extension.</summary>
    public class DiagnosticContent
    {
        public string SandboxId { get; set; }
        public string Kind { get; set; }
        public string Scope { get; set; }
        public string Delivery { get; set; }
        public string ContentType { get; set; }
        public bool? Truncated { get; set; }
        public string Content { get; set; }
        public string ContentUrl { get; set; }
        public long? ContentLength { get; set; }
        public DateTime? ExpiresAt { get; set; }
        public IReadOnlyList<string> Warnings { get; set; }

        internal static DiagnosticContent FromJson(object j)
        {
            return new DiagnosticContent
            {
                SandboxId = Json.Str(j, "sandboxId"),
                Kind = Json.Str(j, "kind"),
                Scope = Json.Str(j, "scope"),
                Delivery = Json.Str(j, "delivery"),
                ContentType = Json.Str(j, "contentType"),
                Truncated = Json.Bool(j, "truncated"),
                Content = Json.Str(j, "content"),
                ContentUrl = Json.Str(j, "contentUrl"),
                ContentLength = Json.Long(j, "contentLength"),
                ExpiresAt = Json.Time(j, "expiresAt"),
                Warnings = Json.StrList(j, "warnings") ?? new List<string>(),
            };
        }
    }

    internal static class ModelJson
    {
        public static string ActionName(NetworkRuleAction a) { return a == NetworkRuleAction.Allow ? "allow" : "deny"; }

        public static NetworkRuleAction ParseAction(string s)
        {
            return string.Equals(s, "allow", StringComparison.OrdinalIgnoreCase) ? NetworkRuleAction.Allow : NetworkRuleAction.Deny;
        }

        public static Dictionary<string, object> StrMapToJson(IEnumerable<KeyValuePair<string, string>> m)
        {
            if (m == null) return null;
            var o = new Dictionary<string, object>();
            foreach (var kv in m) o[kv.Key] = kv.Value;
            return o;
        }
    }
}
