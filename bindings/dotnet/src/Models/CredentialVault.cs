// (1.1) Credential vault models (credential_vault.* ops). Values are write-only: the
// server returns sanitized metadata, never a credential's value.

using System.Collections.Generic;
using OpenSandbox.Core;
using OpenSandbox.Internal;

namespace OpenSandbox.Models
{
    public class InlineCredentialSource
    {
        public string Type { get; set; } = "inline";
        public string Value { get; set; }
    }

    public class Credential
    {
        public string Name { get; set; }
        public InlineCredentialSource Source { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            if (string.IsNullOrEmpty(Name)) throw new InvalidArgumentException("Credential.Name is required");
            if (Source == null || Source.Value == null) throw new InvalidArgumentException("Credential.Source.Value is required (credential " + Name + ")");
            return Args.Of("name", Name, "source", Args.Of("type", Source.Type, "value", Source.Value));
        }
    }

    public class CredentialMatch
    {
        public IReadOnlyList<string> Schemes { get; set; }
        /// <summary>Ignored by the server: the port follows the scheme (https 443, http 80).</summary>
        public IReadOnlyList<int> Ports { get; set; }
        /// <summary>Exact FQDNs or leftmost-label wildcards. Required.</summary>
        public IReadOnlyList<string> Hosts { get; set; }
        public IReadOnlyList<string> Methods { get; set; }
        public IReadOnlyList<string> Paths { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            if (Hosts == null || Hosts.Count == 0) throw new InvalidArgumentException("CredentialMatch.Hosts must not be empty");
            List<object> ports = null;
            if (Ports != null)
            {
                ports = new List<object>();
                foreach (var p in Ports) ports.Add((long)p);
            }
            return Args.Of("hosts", Args.List(Hosts), "schemes", Schemes == null ? null : Args.List(Schemes), "ports", ports,
                "methods", Methods == null ? null : Args.List(Methods), "paths", Paths == null ? null : Args.List(Paths));
        }

        internal static CredentialMatch FromJson(object j)
        {
            if (j == null) return null;
            return new CredentialMatch
            {
                Hosts = Json.StrList(j, "hosts") ?? new List<string>(),
                Schemes = Json.StrList(j, "schemes"),
                Methods = Json.StrList(j, "methods"),
                Paths = Json.StrList(j, "paths"),
            };
        }
    }

    public class CustomHeaderEntry
    {
        public string Name { get; set; }
        public string Credential { get; set; }
    }

    public class CredentialSubstitution
    {
        public string Credential { get; set; }
        public string Placeholder { get; set; }
        /// <summary>Request surfaces where the placeholder is replaced (e.g. "query", "header", "body").</summary>
        public IReadOnlyList<string> In { get; set; }
    }

    public class CredentialAuth
    {
        /// <summary>bearer, basic, apiKey, customHeaders or passthrough.</summary>
        public string Type { get; set; }
        public string Credential { get; set; }
        public string Name { get; set; }
        public IReadOnlyList<CustomHeaderEntry> Headers { get; set; }
        public IReadOnlyList<CredentialSubstitution> Substitutions { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            if (string.IsNullOrEmpty(Type)) throw new InvalidArgumentException("CredentialAuth.Type is required");
            var o = Args.Of("type", Type, "credential", Credential, "name", Name);
            if (Headers != null)
            {
                var l = new List<object>();
                foreach (var h in Headers) l.Add(Args.Of("name", h.Name, "credential", h.Credential));
                o["headers"] = l;
            }
            if (Substitutions != null)
            {
                var l = new List<object>();
                foreach (var s in Substitutions) l.Add(Args.Of("credential", s.Credential, "placeholder", s.Placeholder, "in", Args.List(s.In)));
                o["substitutions"] = l;
            }
            return o;
        }
    }

    public class CredentialBinding
    {
        public string Name { get; set; }
        public CredentialMatch Match { get; set; }
        public CredentialAuth Auth { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            if (string.IsNullOrEmpty(Name)) throw new InvalidArgumentException("CredentialBinding.Name is required");
            if (Match == null) throw new InvalidArgumentException("CredentialBinding.Match is required (binding " + Name + ")");
            if (Auth == null) throw new InvalidArgumentException("CredentialBinding.Auth is required (binding " + Name + ")");
            return Args.Of("name", Name, "match", Match.ToJson(), "auth", Auth.ToJson());
        }
    }

    public class CredentialMetadata
    {
        public string Name { get; set; }
        public string SourceType { get; set; }
        public int Revision { get; set; }

        internal static CredentialMetadata FromJson(object j)
        {
            return new CredentialMetadata { Name = Json.Str(j, "name"), SourceType = Json.Str(j, "sourceType"), Revision = (int)(Json.Long(j, "revision") ?? 0) };
        }
    }

    public class CredentialAuthMetadata
    {
        public string Type { get; set; }
        public string Name { get; set; }
    }

    public class CredentialBindingMetadata
    {
        public string Name { get; set; }
        public int Revision { get; set; }
        public CredentialMatch Match { get; set; }
        public CredentialAuthMetadata Auth { get; set; }

        internal static CredentialBindingMetadata FromJson(object j)
        {
            var a = Json.Get(j, "auth");
            return new CredentialBindingMetadata
            {
                Name = Json.Str(j, "name"),
                Revision = (int)(Json.Long(j, "revision") ?? 0),
                Match = CredentialMatch.FromJson(Json.Get(j, "match")),
                Auth = a == null ? null : new CredentialAuthMetadata { Type = Json.Str(a, "type"), Name = Json.Str(a, "name") },
            };
        }
    }

    public class CredentialVaultState
    {
        public int Revision { get; set; }
        public IReadOnlyList<CredentialMetadata> Credentials { get; set; }
        public IReadOnlyList<CredentialBindingMetadata> Bindings { get; set; }

        internal static CredentialVaultState FromJson(object j)
        {
            return new CredentialVaultState
            {
                Revision = (int)(Json.Long(j, "revision") ?? 0),
                Credentials = VaultJson.Credentials(Json.Get(j, "credentials")),
                Bindings = VaultJson.Bindings(Json.Get(j, "bindings")),
            };
        }
    }

    public class CredentialListResponse
    {
        public int Revision { get; set; }
        public IReadOnlyList<CredentialMetadata> Credentials { get; set; }
    }

    public class CredentialBindingListResponse
    {
        public int Revision { get; set; }
        public IReadOnlyList<CredentialBindingMetadata> Bindings { get; set; }
    }

    public class CredentialVaultCreateRequest
    {
        public IReadOnlyList<Credential> Credentials { get; set; }
        public IReadOnlyList<CredentialBinding> Bindings { get; set; }
    }

    public class CredentialMutationSet
    {
        public IReadOnlyList<Credential> Add { get; set; }
        public IReadOnlyList<Credential> Replace { get; set; }
        public IReadOnlyList<string> Delete { get; set; }
    }

    public class CredentialBindingMutationSet
    {
        public IReadOnlyList<CredentialBinding> Add { get; set; }
        public IReadOnlyList<CredentialBinding> Replace { get; set; }
        public IReadOnlyList<string> Delete { get; set; }
    }

    public class CredentialVaultPatchRequest
    {
        /// <summary>Optimistic concurrency guard: the patch fails with 409 when the vault is at another revision.</summary>
        public int? ExpectedRevision { get; set; }
        public CredentialMutationSet Credentials { get; set; }
        public CredentialBindingMutationSet Bindings { get; set; }
    }

    internal static class VaultJson
    {
        public static List<CredentialMetadata> Credentials(object arr)
        {
            var l = new List<CredentialMetadata>();
            foreach (var x in Json.Arr(arr) ?? new List<object>()) l.Add(CredentialMetadata.FromJson(x));
            return l;
        }

        public static List<CredentialBindingMetadata> Bindings(object arr)
        {
            var l = new List<CredentialBindingMetadata>();
            foreach (var x in Json.Arr(arr) ?? new List<object>()) l.Add(CredentialBindingMetadata.FromJson(x));
            return l;
        }

        public static List<object> CredentialList(IEnumerable<Credential> cs)
        {
            var l = new List<object>();
            if (cs != null) foreach (var c in cs) { if (c == null) throw new InvalidArgumentException("credentials must not contain null"); l.Add(c.ToJson()); }
            return l;
        }

        public static List<object> BindingList(IEnumerable<CredentialBinding> bs)
        {
            var l = new List<object>();
            if (bs != null) foreach (var b in bs) { if (b == null) throw new InvalidArgumentException("bindings must not contain null"); l.Add(b.ToJson()); }
            return l;
        }

        public static Dictionary<string, object> Mutation(IEnumerable<Credential> add, IEnumerable<Credential> replace, IEnumerable<string> delete)
        {
            return Args.Of("add", add == null ? null : CredentialList(add), "replace", replace == null ? null : CredentialList(replace),
                "delete", delete == null ? null : Args.List(delete));
        }

        public static Dictionary<string, object> Mutation(IEnumerable<CredentialBinding> add, IEnumerable<CredentialBinding> replace, IEnumerable<string> delete)
        {
            return Args.Of("add", add == null ? null : BindingList(add), "replace", replace == null ? null : BindingList(replace),
                "delete", delete == null ? null : Args.List(delete));
        }
    }
}
