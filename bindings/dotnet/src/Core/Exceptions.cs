// Exception classes of the official Alibaba.OpenSandbox package (namespace OpenSandbox.Core).
// Every error from the native core arrives as (kind, status, code, message, request id) and
// is mapped by SandboxExceptionFactory to the class a user of the official SDK catches.

using System;

namespace OpenSandbox.Core
{
    /// <summary>Stable SDK error codes (used when the server gave no code of its own).</summary>
    public static class SandboxErrorCodes
    {
        public const string InternalUnknownError = "INTERNAL_UNKNOWN_ERROR";
        public const string ReadyTimeout = "READY_TIMEOUT";
        public const string Unhealthy = "UNHEALTHY";
        public const string InvalidArgument = "INVALID_ARGUMENT";
        public const string UnexpectedResponse = "UNEXPECTED_RESPONSE";
    }

    /// <summary>A structured error: a code (server code or <see cref="SandboxErrorCodes"/>) and a message.</summary>
    public class SandboxError
    {
        public SandboxError(string code, string message = null)
        {
            Code = code;
            Message = message;
        }

        public string Code { get; private set; }
        public string Message { get; private set; }

        public override string ToString() { return "[" + Code + "] " + Message; }
    }

    /// <summary>Root of every exception the SDK throws.</summary>
    public class SandboxException : Exception
    {
        public SandboxException(string message = null, Exception innerException = null, SandboxError error = null, string requestId = null)
            : base(message ?? (error != null ? error.Message : null) ?? "sandbox error", innerException)
        {
            Error = error ?? new SandboxError(SandboxErrorCodes.InternalUnknownError, message);
            RequestId = requestId;
        }

        /// <summary>The structured error (code and message).</summary>
        public SandboxError Error { get; private set; }

        /// <summary>The X-Request-ID of the failing request, when known.</summary>
        public string RequestId { get; private set; }

        /// <summary>The core's stable error kind: api, not_found, unauthorized, timeout, ready_timeout,
        /// connection, stream, invalid_argument, cancelled or internal (an extension over the official SDK).</summary>
        public string Kind { get; internal set; }
    }

    /// <summary>The server answered with an error status (or an unexpected response).</summary>
    public class SandboxApiException : SandboxException
    {
        public SandboxApiException(string message, int? statusCode = null, string requestId = null, object rawBody = null,
            SandboxError error = null, Exception innerException = null)
            : base(message, innerException, error ?? new SandboxError(SandboxErrorCodes.UnexpectedResponse, message), requestId)
        {
            StatusCode = statusCode;
            RawBody = rawBody;
        }

        /// <summary>HTTP status code, when there was a response.</summary>
        public int? StatusCode { get; private set; }

        /// <summary>The raw response body, when the core kept it.</summary>
        public object RawBody { get; private set; }
    }

    /// <summary>An error inside the SDK itself (transport failure, broken stream, internal bug).</summary>
    public class SandboxInternalException : SandboxException
    {
        public SandboxInternalException(string message, Exception innerException = null, SandboxError error = null, string requestId = null)
            : base(message, innerException, error ?? new SandboxError(SandboxErrorCodes.InternalUnknownError, message), requestId)
        {
        }
    }

    /// <summary>The sandbox answered its health check negatively.</summary>
    public class SandboxUnhealthyException : SandboxException
    {
        public SandboxUnhealthyException(string message, Exception innerException = null, string requestId = null)
            : base(message, innerException, new SandboxError(SandboxErrorCodes.Unhealthy, message), requestId)
        {
        }
    }

    /// <summary>The sandbox did not become ready within the ready timeout.</summary>
    public class SandboxReadyTimeoutException : SandboxException
    {
        public SandboxReadyTimeoutException(string message, Exception innerException = null, string requestId = null)
            : base(message, innerException, new SandboxError(SandboxErrorCodes.ReadyTimeout, message), requestId)
        {
        }
    }

    /// <summary>A caller passed an invalid argument (validated before any request was sent).</summary>
    public class InvalidArgumentException : SandboxException
    {
        public InvalidArgumentException(string message, Exception innerException = null)
            : base(message, innerException, new SandboxError(SandboxErrorCodes.InvalidArgument, message))
        {
        }
    }
}
