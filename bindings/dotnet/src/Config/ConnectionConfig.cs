using System;
using System.Collections.Generic;
using OpenSandbox.Core;
using OpenSandbox.Internal;

namespace OpenSandbox.Config
{
    /// <summary>Transport protocol of the lifecycle API.</summary>
    public enum ConnectionProtocol
    {
        Http,
        Https,
    }

    /// <summary>Options of <see cref="ConnectionConfig"/>; every property is optional.</summary>
    public class ConnectionConfigOptions
    {
        /// <summary>Server domain (<c>host[:port]</c>, a leading http(s):// sets the protocol). Default: env OPEN_SANDBOX_DOMAIN, else localhost:8080.</summary>
        public string Domain { get; set; }

        /// <summary>Protocol; default http.</summary>
        public ConnectionProtocol? Protocol { get; set; }

        /// <summary>API key sent as OPEN-SANDBOX-API-KEY. Default: env OPEN_SANDBOX_API_KEY. An empty string sends no key.</summary>
        public string ApiKey { get; set; }

        /// <summary>Extra headers sent with every request.</summary>
        public IReadOnlyDictionary<string, string> Headers { get; set; }

        /// <summary>Timeout of one ordinary request in seconds; default 30.</summary>
        public int? RequestTimeoutSeconds { get; set; }

        /// <summary>Ask the server for proxied endpoints.</summary>
        public bool? UseServerProxy { get; set; }

        /// <summary>How long a resolved sandbox endpoint is reused, in seconds (the core's endpoint cache). Default 600; 0 turns the cache off; negative is an <see cref="InvalidArgumentException"/>.</summary>
        public int? EndpointCacheTtlSeconds { get; set; }

        /// <summary>Maximum number of cached endpoints (least recently used out first). Default 1024; 0 turns the cache off; negative is an <see cref="InvalidArgumentException"/>.</summary>
        public int? EndpointCacheSize { get; set; }

        /// <summary>Turn the endpoint cache off.</summary>
        public bool? EndpointCacheDisabled { get; set; }

        /// <summary>Turn off the official SDK's lifecycle latency reports. This package sends no such reports, so it is always as if set.</summary>
        public bool? DisableMetrics { get; set; }
    }

    /// <summary>Connection settings shared by sandboxes and managers. Immutable once built.</summary>
    public sealed class ConnectionConfig
    {

        public ConnectionConfig() : this(null) { }

        public ConnectionConfig(ConnectionConfigOptions options)
        {
            options = options ?? new ConnectionConfigOptions();
            var domain = options.Domain;
            if (string.IsNullOrEmpty(domain)) domain = Environment.GetEnvironmentVariable(Constants.EnvDomain);
            if (string.IsNullOrEmpty(domain)) domain = Constants.DefaultDomain;
            var protocol = options.Protocol ?? ConnectionProtocol.Http;
            if (domain.StartsWith("https://", StringComparison.OrdinalIgnoreCase))
            {
                protocol = ConnectionProtocol.Https;
                domain = domain.Substring(8);
            }
            else if (domain.StartsWith("http://", StringComparison.OrdinalIgnoreCase))
            {
                protocol = ConnectionProtocol.Http;
                domain = domain.Substring(7);
            }
            Domain = domain.TrimEnd('/');
            Protocol = protocol;
            ApiKey = options.ApiKey ?? Environment.GetEnvironmentVariable(Constants.EnvApiKey);
            var headers = new Dictionary<string, string>();
            if (options.Headers != null)
                foreach (var kv in options.Headers) headers[kv.Key] = kv.Value;
            Headers = headers;
            var timeout = options.RequestTimeoutSeconds ?? Constants.DefaultRequestTimeoutSeconds;
            if (timeout <= 0) throw new InvalidArgumentException("RequestTimeoutSeconds must be positive");
            RequestTimeoutSeconds = timeout;
            UseServerProxy = options.UseServerProxy ?? false;
            var ttl = options.EndpointCacheTtlSeconds ?? DefaultEndpointCacheTtlSeconds;
            if (ttl < 0) throw new InvalidArgumentException("EndpointCacheTtlSeconds must not be negative");
            var size = options.EndpointCacheSize ?? DefaultEndpointCacheSize;
            if (size < 0) throw new InvalidArgumentException("EndpointCacheSize must not be negative");
            EndpointCacheTtlSeconds = ttl;
            EndpointCacheSize = size;
            EndpointCacheDisabled = options.EndpointCacheDisabled ?? false;
            DisableMetrics = true;
        }

        /// <summary>The official SDK's endpoint cache TTL (seconds).</summary>
        public const int DefaultEndpointCacheTtlSeconds = 600;

        /// <summary>The official SDK's endpoint cache size.</summary>
        public const int DefaultEndpointCacheSize = 1024;

        public string Domain { get; private set; }
        public ConnectionProtocol Protocol { get; private set; }
        public string ApiKey { get; private set; }
        public IReadOnlyDictionary<string, string> Headers { get; private set; }
        public int RequestTimeoutSeconds { get; private set; }
        public bool UseServerProxy { get; private set; }
        public int EndpointCacheTtlSeconds { get; private set; }
        public int EndpointCacheSize { get; private set; }
        public bool EndpointCacheDisabled { get; private set; }

        /// <summary>Always true: this package sends no lifecycle latency reports.</summary>
        public bool DisableMetrics { get; private set; }

        /// <summary>The lifecycle API base URL, e.g. <c>http://localhost:8080/v1</c>.</summary>
        public string GetBaseUrl()
        {
            return (Protocol == ConnectionProtocol.Https ? "https" : "http") + "://" + Domain + "/v1";
        }

        internal string ProtocolName { get { return Protocol == ConnectionProtocol.Https ? "https" : "http"; } }

        /// <summary>This configuration as the op layer's <c>connection</c> overrides (bindings/common).</summary>
        internal Dictionary<string, object> ToSessionConnection()
        {
            var o = new Dictionary<string, object>();
            o["domain"] = Domain;
            o["protocol"] = ProtocolName;
            o["api_key"] = string.IsNullOrEmpty(ApiKey) ? null : ApiKey;
            o["request_timeout_s"] = (long)RequestTimeoutSeconds;
            var h = new Dictionary<string, object>();
            foreach (var kv in Headers) h[kv.Key] = kv.Value;
            ClientIp.Apply(h, ClientIp.Value);
            o["headers"] = h;
            o["use_server_proxy"] = UseServerProxy;
            o["user_agent"] = Constants.UserAgent;
            var cacheOff = EndpointCacheDisabled || EndpointCacheTtlSeconds == 0 || EndpointCacheSize == 0;
            o["endpoint_cache_ttl_s"] = cacheOff ? 0L : (long)EndpointCacheTtlSeconds;
            o["endpoint_cache_size"] = cacheOff ? 0L : (long)EndpointCacheSize;
            return o;
        }
    }
}
