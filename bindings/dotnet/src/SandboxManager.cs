using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using OpenSandbox.Config;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;

namespace OpenSandbox
{
    /// <summary>Administrative access to every sandbox and snapshot of a server.</summary>
    public sealed class SandboxManager : IAsyncDisposable, IDisposable
    {
        // The op-layer session's manager handle (manager.new): one HTTP client for every call.
        private readonly SessionEntryHandle _handle;

        private SandboxManager(ConnectionConfig config)
        {
            ConnectionConfig = config;
            // manager.new makes no request: a blocking call is cheap here.
            var args = Json.Write(new Dictionary<string, object> { { "connection", config.ToSessionConnection() } });
            using (var cancel = CancelHandle.New())
            {
                var r = Json.Parse(Bridge.SessionCallBlocking("manager.new", args, cancel, CancellationToken.None));
                _handle = SessionEntryHandle.Of(Json.Long(r, "handle") ?? 0);
            }
        }

        public ConnectionConfig ConnectionConfig { get; private set; }

        public static SandboxManager Create(SandboxManagerOptions options = null)
        {
            var config = (options != null ? options.ConnectionConfig : null) ?? new ConnectionConfig();
            return new SandboxManager(config);
        }

        private async Task<object> CallAsync(string op, Dictionary<string, object> args, CancellationToken ct)
        {
            if (_handle.IsClosed) throw new ObjectDisposedException("SandboxManager");
            args = args ?? new Dictionary<string, object>();
            args["manager"] = _handle.Id;
            var r = await Bridge.SessionCall("manager." + op, Json.Write(args), ct).ConfigureAwait(false);
            return r == null ? null : Json.Parse(r);
        }

        private static Dictionary<string, object> Id(string sandboxId)
        {
            Args.Require(sandboxId, "sandboxId");
            return Args.Of("sandbox_id", sandboxId);
        }

        public async Task<ListSandboxesResponse> ListSandboxInfosAsync(SandboxFilter filter = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            filter = filter ?? new SandboxFilter();
            var args = Args.Of(
                "states", filter.States == null ? null : Args.List(filter.States),
                "metadata", ModelJson.StrMapToJson(filter.Metadata),
                "page", filter.Page,
                "page_size", filter.PageSize);
            var r = await CallAsync("list_sandbox_infos", args, cancellationToken).ConfigureAwait(false);
            var items = new List<SandboxInfo>();
            var arr = Json.Arr(Json.Get(r, "sandbox_infos"));
            if (arr != null) foreach (var x in arr) items.Add(SandboxInfo.FromJson(x));
            return new ListSandboxesResponse { Items = items, Pagination = PaginationInfo.FromJson(Json.Get(r, "pagination")) };
        }

        public async Task<SandboxInfo> GetSandboxInfoAsync(string sandboxId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return SandboxInfo.FromJson(await CallAsync("get_sandbox_info", Id(sandboxId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<SandboxInfo> PatchSandboxMetadataAsync(string sandboxId, IReadOnlyDictionary<string, string> patch, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (patch == null) throw new InvalidArgumentException("patch is required");
            var args = Id(sandboxId);
            var p = new Dictionary<string, object>();
            foreach (var kv in patch) p[kv.Key] = kv.Value;
            args["patch"] = p;
            return SandboxInfo.FromJson(await CallAsync("patch_sandbox_metadata", args, cancellationToken).ConfigureAwait(false));
        }

        public Task KillSandboxAsync(string sandboxId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CallAsync("kill_sandbox", Id(sandboxId), cancellationToken);
        }

        public Task PauseSandboxAsync(string sandboxId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CallAsync("pause_sandbox", Id(sandboxId), cancellationToken);
        }

        public Task ResumeSandboxAsync(string sandboxId, CancellationToken cancellationToken = default(CancellationToken))
        {
            return CallAsync("resume_sandbox", Id(sandboxId), cancellationToken);
        }

        /// <summary>Sets the expiry to now + timeoutSeconds. (The official C# method returns a plain Task; the new expiry is a compatible extra.)</summary>
        public async Task<RenewSandboxExpirationResponse> RenewSandboxAsync(string sandboxId, int timeoutSeconds, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (timeoutSeconds <= 0) throw new InvalidArgumentException("timeoutSeconds must be positive");
            var args = Id(sandboxId);
            args["seconds"] = (long)timeoutSeconds;
            var r = await CallAsync("renew_sandbox", args, cancellationToken).ConfigureAwait(false);
            return new RenewSandboxExpirationResponse { ExpiresAt = Json.Time(r, "expiresAt") };
        }

        public async Task<Endpoint> GetEndpointAsync(string sandboxId, int port, CancellationToken cancellationToken = default(CancellationToken))
        {
            var args = Id(sandboxId);
            args["port"] = (long)port;
            return Endpoint.FromJson(await CallAsync("get_endpoint", args, cancellationToken).ConfigureAwait(false));
        }

        public async Task<SnapshotInfo> CreateSnapshotAsync(string sandboxId, string name = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var args = Id(sandboxId);
            if (name != null) args["name"] = name;
            return SnapshotInfo.FromJson(await CallAsync("create_snapshot", args, cancellationToken).ConfigureAwait(false));
        }

        public async Task<SnapshotInfo> GetSnapshotAsync(string snapshotId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(snapshotId, "snapshotId");
            return SnapshotInfo.FromJson(await CallAsync("get_snapshot", Args.Of("snapshot_id", snapshotId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<ListSnapshotsResponse> ListSnapshotsAsync(SnapshotFilter filter = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            filter = filter ?? new SnapshotFilter();
            var args = Args.Of(
                "sandbox_id", filter.SandboxId,
                "states", filter.States == null ? null : Args.List(filter.States),
                "page", filter.Page,
                "page_size", filter.PageSize);
            var r = await CallAsync("list_snapshots", args, cancellationToken).ConfigureAwait(false);
            var items = new List<SnapshotInfo>();
            var arr = Json.Arr(Json.Get(r, "snapshot_infos"));
            if (arr != null) foreach (var x in arr) items.Add(SnapshotInfo.FromJson(x));
            return new ListSnapshotsResponse { Items = items, Pagination = PaginationInfo.FromJson(Json.Get(r, "pagination")) };
        }

        public Task DeleteSnapshotAsync(string snapshotId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(snapshotId, "snapshotId");
            return CallAsync("delete_snapshot", Args.Of("snapshot_id", snapshotId), cancellationToken);
        }

        // ------------------------------------------------------------------ (1.1) templates

        /// <summary>Declares a template build; it starts at phase Pending: poll <see cref="GetTemplateAsync"/> until Succeeded or Failed.</summary>
        public async Task<TemplateInfo> CreateTemplateAsync(CreateTemplateRequest request, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (request == null) throw new InvalidArgumentException("request is required");
            if (string.IsNullOrWhiteSpace(request.Image)) throw new InvalidArgumentException("CreateTemplateRequest.Image is required");
            if (string.IsNullOrWhiteSpace(request.Publish)) throw new InvalidArgumentException("CreateTemplateRequest.Publish is required");
            var args = Args.Of(
                "image", request.Image,
                "publish", request.Publish,
                "resource_limits", ModelJson.StrMapToJson(request.ResourceLimits),
                "entrypoint", request.Entrypoint == null ? null : Args.List(request.Entrypoint),
                "env", ModelJson.StrMapToJson(request.Env),
                "metadata", ModelJson.StrMapToJson(request.Metadata),
                "format", request.Format);
            if (request.Readiness != null)
            {
                if (request.Readiness.WarmupSeconds.HasValue && request.Readiness.WarmupSeconds.Value < 0)
                    throw new InvalidArgumentException("TemplateReadiness.WarmupSeconds must not be negative");
                args["readiness"] = Args.Of("probe", request.Readiness.Probe,
                    "warmup_seconds", request.Readiness.WarmupSeconds.HasValue ? (object)(long)request.Readiness.WarmupSeconds.Value : null);
            }
            return TemplateInfo.FromJson(await CallAsync("create_template", args, cancellationToken).ConfigureAwait(false));
        }

        public async Task<TemplateInfo> GetTemplateAsync(string templateId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(templateId, "templateId");
            return TemplateInfo.FromJson(await CallAsync("get_template", Args.Of("template_id", templateId), cancellationToken).ConfigureAwait(false));
        }

        public async Task<ListTemplatesResponse> ListTemplatesAsync(TemplateFilter filter = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            filter = filter ?? new TemplateFilter();
            if (filter.Page.HasValue && filter.Page.Value < 1) throw new InvalidArgumentException("Page is 1-based");
            if (filter.PageSize.HasValue && (filter.PageSize.Value < 1 || filter.PageSize.Value > 200)) throw new InvalidArgumentException("PageSize must be in 1..200");
            var args = Args.Of("metadata", ModelJson.StrMapToJson(filter.Metadata), "page", filter.Page, "page_size", filter.PageSize);
            var r = await CallAsync("list_templates", args, cancellationToken).ConfigureAwait(false);
            var items = new List<TemplateInfo>();
            foreach (var x in Json.Arr(Json.Get(r, "template_infos")) ?? new List<object>()) items.Add(TemplateInfo.FromJson(x));
            return new ListTemplatesResponse { Items = items, Pagination = PaginationInfo.FromJson(Json.Get(r, "pagination")) };
        }

        /// <summary>Deletes a template; sandboxes created from it keep running.</summary>
        public Task DeleteTemplateAsync(string templateId, CancellationToken cancellationToken = default(CancellationToken))
        {
            Args.Require(templateId, "templateId");
            return CallAsync("delete_template", Args.Of("template_id", templateId), cancellationToken);
        }

        /// <summary>Server diagnostics (extension, not in the official C# SDK).</summary>
        public async Task<DiagnosticContent> GetDiagnosticLogsAsync(string sandboxId, string scope, CancellationToken cancellationToken = default(CancellationToken))
        {
            var args = Id(sandboxId);
            args["scope"] = scope;
            return DiagnosticContent.FromJson(await CallAsync("get_diagnostic_logs", args, cancellationToken).ConfigureAwait(false));
        }

        /// <summary>Server diagnostics (extension, not in the official C# SDK).</summary>
        public async Task<DiagnosticContent> GetDiagnosticEventsAsync(string sandboxId, string scope, CancellationToken cancellationToken = default(CancellationToken))
        {
            var args = Id(sandboxId);
            args["scope"] = scope;
            return DiagnosticContent.FromJson(await CallAsync("get_diagnostic_events", args, cancellationToken).ConfigureAwait(false));
        }

        public ValueTask DisposeAsync()
        {
            Dispose();
            return default(ValueTask);
        }

        public void Dispose()
        {
            _handle.Dispose();
        }
    }
}
