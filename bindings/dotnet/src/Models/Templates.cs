// (1.1) Templates: golden-image builds declared on the server (manager.*_template ops).

using System;
using System.Collections.Generic;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    /// <summary>Build phases of a template; the server may add phases, so compare as strings.</summary>
    public static class TemplatePhases
    {
        public const string Pending = "Pending";
        public const string Building = "Building";
        public const string Succeeded = "Succeeded";
        public const string Failed = "Failed";
    }

    /// <summary>Build-side readiness gate of a template.</summary>
    public class TemplateReadiness
    {
        /// <summary>Probe checked during the build, e.g. "tcp://127.0.0.1:44772" or "cmd://true".</summary>
        public string Probe { get; set; }
        /// <summary>Fallback warm-up window in seconds (server default 60).</summary>
        public int? WarmupSeconds { get; set; }

        internal static TemplateReadiness FromJson(object j)
        {
            if (j == null) return null;
            var w = Json.Long(j, "warmupSeconds");
            return new TemplateReadiness { Probe = Json.Str(j, "probe"), WarmupSeconds = w.HasValue ? (int?)(int)w.Value : null };
        }
    }

    public class TemplateStatus
    {
        /// <summary>See <see cref="TemplatePhases"/>.</summary>
        public string Phase { get; set; }
        /// <summary>Manifest of the published artifacts (phase Succeeded).</summary>
        public string ManifestRef { get; set; }
        /// <summary>Failure reason (phase Failed).</summary>
        public string Message { get; set; }
    }

    /// <summary>Request of <see cref="SandboxManager.CreateTemplateAsync"/>; Image and Publish are required.</summary>
    public class CreateTemplateRequest
    {
        public string Image { get; set; }
        /// <summary>Publish target of the built artifacts, e.g. "s3://bucket/publish".</summary>
        public string Publish { get; set; }
        /// <summary>Guest sizing, e.g. {"cpu": "1", "memory": "512Mi", "disk": "2Gi"}.</summary>
        public IReadOnlyDictionary<string, string> ResourceLimits { get; set; }
        public IReadOnlyList<string> Entrypoint { get; set; }
        /// <summary>Environment of the template's sandboxes (the 1.1 wire field; an extension of the C# request model).</summary>
        public IReadOnlyDictionary<string, string> Env { get; set; }
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        public TemplateReadiness Readiness { get; set; }
        /// <summary>"native" or "overlaybd" (server default overlaybd).</summary>
        public string Format { get; set; }
    }

    public class TemplateInfo
    {
        public string TemplateId { get; set; }
        public string Image { get; set; }
        public string Publish { get; set; }
        public string Format { get; set; }
        public TemplateStatus Status { get; set; }
        public DateTime CreatedAt { get; set; }
        public DateTime UpdatedAt { get; set; }
        public IReadOnlyDictionary<string, string> ResourceLimits { get; set; }
        public IReadOnlyList<string> Entrypoint { get; set; }
        /// <summary>Environment of the template's sandboxes (extension, see CreateTemplateRequest.Env).</summary>
        public IReadOnlyDictionary<string, string> Env { get; set; }
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        public TemplateReadiness Readiness { get; set; }

        internal static TemplateInfo FromJson(object j)
        {
            if (j == null) return null;
            var st = Json.Get(j, "status");
            return new TemplateInfo
            {
                TemplateId = Json.Str(j, "templateId"),
                Image = Json.Str(j, "image"),
                Publish = Json.Str(j, "publish"),
                Format = Json.Str(j, "format"),
                Status = new TemplateStatus
                {
                    Phase = Json.Str(st, "phase"),
                    ManifestRef = Json.Str(st, "manifestRef"),
                    Message = Json.Str(st, "message"),
                },
                CreatedAt = Json.Time(j, "createdAt") ?? default(DateTime),
                UpdatedAt = Json.Time(j, "updatedAt") ?? default(DateTime),
                ResourceLimits = Json.StrMap(j, "resourceLimits"),
                Entrypoint = Json.StrList(j, "entrypoint"),
                Env = Json.StrMap(j, "env"),
                Metadata = Json.StrMap(j, "metadata"),
                Readiness = TemplateReadiness.FromJson(Json.Get(j, "readiness")),
            };
        }
    }

    public class ListTemplatesResponse
    {
        public IReadOnlyList<TemplateInfo> Items { get; set; }
        public PaginationInfo Pagination { get; set; }
    }

    /// <summary>Parameters of a template listing (the adapter-level name; <see cref="TemplateFilter"/> is the manager's).</summary>
    public class ListTemplatesParams
    {
        public IReadOnlyDictionary<string, string> Metadata { get; set; }
        public int? Page { get; set; }
        public int? PageSize { get; set; }
    }
}
