namespace OpenSandbox.Core
{
    /// <summary>Defaults and names shared by the SDK (the same in every official SDK).</summary>
    public static class Constants
    {
        public const string SdkVersion = "1.1.1";
        public const string UserAgent = "OpenSandbox-CSharp-SDK/" + SdkVersion;
        public const int DefaultExecdPort = 44772;
        public const int DefaultEgressPort = 18080;
        public const string EnvDomain = "OPEN_SANDBOX_DOMAIN";
        public const string EnvApiKey = "OPEN_SANDBOX_API_KEY";
        public const string ApiKeyHeader = "OPEN-SANDBOX-API-KEY";
        public const string RequestIdHeader = "X-Request-ID";
        public const string DefaultDomain = "localhost:8080";
        public const int DefaultRequestTimeoutSeconds = 30;
        public const int DefaultTimeoutSeconds = 600;
        public const int DefaultReadyTimeoutSeconds = 30;
        public const int DefaultHealthCheckPollingIntervalMillis = 200;
        public static readonly string[] DefaultEntrypoint = { "tail", "-f", "/dev/null" };
    }
}
