// Tests that need no server: JSON, error mapping, configuration, argument validation and
// the native plumbing (library loads, cancellation before start, no pending leaks).

using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using OpenSandbox;
using OpenSandbox.Config;
using OpenSandbox.Core;
using OpenSandbox.Internal;
using OpenSandbox.Models;
using OpenSandbox.Native;

namespace OpenSandbox.Tests
{
    [TestFixture]
    public class JsonTests
    {
        [Test]
        public void ParsesNestedValues()
        {
            var v = Json.Parse("{\"a\": [1, 2.5, \"x\\n\\u00e9\", true, null], \"b\": {\"c\": -3}}");
            var a = Json.Arr(Json.Get(v, "a"));
            Assert.AreEqual(5, a.Count);
            Assert.AreEqual(1L, a[0]);
            Assert.AreEqual(2.5, a[1]);
            Assert.AreEqual("x\n\u00e9", a[2]);
            Assert.AreEqual(true, a[3]);
            Assert.IsNull(a[4]);
            Assert.AreEqual(-3L, Json.Long(Json.Get(v, "b"), "c"));
        }

        [Test]
        public void WritesAndRoundTrips()
        {
            var o = new Dictionary<string, object> { { "s", "q\"\\\t\u0001" }, { "n", 42L }, { "l", new List<object> { 1.5, false } }, { "z", null } };
            var text = Json.Write(o);
            Assert.AreEqual("{\"s\":\"q\\\"\\\\\\t\\u0001\",\"n\":42,\"l\":[1.5,false],\"z\":null}", text);
            Assert.AreEqual(text, Json.Write(Json.Parse(text)));
        }

        [Test]
        public void RejectsMalformedJson()
        {
            Assert.Throws<FormatException>(() => Json.Parse("{\"a\": }"));
            Assert.Throws<FormatException>(() => Json.Parse("[1, 2"));
            Assert.Throws<FormatException>(() => Json.Parse("1 2"));
        }

        [Test]
        public void ReadsTimesAsUtc()
        {
            var t = Json.Time(Json.Parse("{\"t\": \"2026-11-30T20:00:00+01:00\"}"), "t");
            Assert.AreEqual(new DateTime(2026, 11, 30, 19, 0, 0, DateTimeKind.Utc), t.Value.ToUniversalTime());
        }
    }

    [TestFixture]
    public class ErrorMappingTests
    {
        [Test]
        public void ApiKindsBecomeSandboxApiException()
        {
            var e = ErrorMapper.ToException("not_found", 404, "SANDBOX::NOT_FOUND", "gone", "rid-1", "{}");
            var api = e as SandboxApiException;
            Assert.IsNotNull(api);
            Assert.AreEqual(404, api.StatusCode);
            Assert.AreEqual("SANDBOX::NOT_FOUND", api.Error.Code);
            Assert.AreEqual("rid-1", api.RequestId);
            Assert.AreEqual("{}", api.RawBody);
            Assert.AreEqual("not_found", api.Kind);
            Assert.AreEqual("gone", api.Message);
        }

        [Test]
        public void OtherKindsMapToTheirClasses()
        {
            Assert.IsInstanceOf<SandboxReadyTimeoutException>(ErrorMapper.ToException("ready_timeout", null, null, "m", null, null));
            Assert.IsInstanceOf<InvalidArgumentException>(ErrorMapper.ToException("invalid_argument", null, null, "m", null, null));
            var c = ErrorMapper.ToException("connection", null, null, "refused", null, null);
            Assert.IsInstanceOf<SandboxInternalException>(c);
            Assert.AreEqual("connection", c.Kind);
            Assert.AreEqual(SandboxErrorCodes.InternalUnknownError, c.Error.Code);
            Assert.IsInstanceOf<SandboxApiException>(ErrorMapper.ToException("unauthorized", 401, null, "m", null, null));
        }

        [Test]
        public void EveryExceptionIsASandboxException()
        {
            foreach (var kind in new[] { "api", "not_found", "unauthorized", "timeout", "ready_timeout", "connection", "stream", "invalid_argument", "cancelled", "internal", "future_kind" })
                Assert.IsInstanceOf<SandboxException>(ErrorMapper.ToException(kind, null, null, "m", null, null), kind);
        }
    }

    [TestFixture]
    public class ConnectionConfigTests
    {
        [Test]
        public void SchemeInDomainSetsProtocol()
        {
            var c = new ConnectionConfig(new ConnectionConfigOptions { Domain = "https://example.test:9443/" });
            Assert.AreEqual(ConnectionProtocol.Https, c.Protocol);
            Assert.AreEqual("example.test:9443", c.Domain);
            Assert.AreEqual("https://example.test:9443/v1", c.GetBaseUrl());
        }

        [Test]
        public void DefaultsFollowTheOfficialSdk()
        {
            var c = new ConnectionConfig(new ConnectionConfigOptions { Domain = "h:1" });
            Assert.AreEqual(30, c.RequestTimeoutSeconds);
            Assert.AreEqual(ConnectionProtocol.Http, c.Protocol);
            Assert.IsFalse(c.UseServerProxy);
        }

        [Test]
        public void RejectsNonPositiveTimeout()
        {
            Assert.Throws<InvalidArgumentException>(() => new ConnectionConfig(new ConnectionConfigOptions { RequestTimeoutSeconds = 0 }));
        }

        [Test]
        public async Task EndpointCacheOptionsReachTheCore()
        {
            var d = new ConnectionConfig(new ConnectionConfigOptions { Domain = "h:1" }).ToSessionConnection();
            Assert.AreEqual(600L, d["endpoint_cache_ttl_s"]);
            Assert.AreEqual(1024L, d["endpoint_cache_size"]);
            var set = new ConnectionConfig(new ConnectionConfigOptions { Domain = "h:1", EndpointCacheTtlSeconds = 5, EndpointCacheSize = 7 });
            Assert.AreEqual(5L, set.ToSessionConnection()["endpoint_cache_ttl_s"]);
            Assert.AreEqual(7L, set.ToSessionConnection()["endpoint_cache_size"]);
            var off = new ConnectionConfig(new ConnectionConfigOptions { Domain = "h:1", EndpointCacheTtlSeconds = 5, EndpointCacheDisabled = true }).ToSessionConnection();
            Assert.AreEqual(0L, off["endpoint_cache_ttl_s"]);
            Assert.AreEqual(0L, off["endpoint_cache_size"]);
            Assert.IsTrue(new ConnectionConfig(new ConnectionConfigOptions { DisableMetrics = false }).DisableMetrics);
            // The op layer takes them (it refuses unknown keys).
            var args = new Dictionary<string, object> { { "connection", set.ToSessionConnection() } };
            var info = Json.Parse(await Bridge.SessionCall("config.info", Json.Write(args), CancellationToken.None));
            Assert.AreEqual("h:1", Json.Str(info, "domain"));
            Assert.Throws<InvalidArgumentException>(() => new ConnectionConfig(new ConnectionConfigOptions { EndpointCacheTtlSeconds = -1 }));
            Assert.Throws<InvalidArgumentException>(() => new ConnectionConfig(new ConnectionConfigOptions { EndpointCacheSize = -1 }));
        }

        [Test]
        public async Task NativeConfigResolvesTheSameSettings()
        {
            var c = new ConnectionConfig(new ConnectionConfigOptions { Domain = "example.test:81", ApiKey = "k", RequestTimeoutSeconds = 7 });
            var args = new Dictionary<string, object> { { "connection", c.ToSessionConnection() } };
            var d = Json.Parse(await Bridge.SessionCall("config.info", Json.Write(args), CancellationToken.None));
            Assert.AreEqual("example.test:81", Json.Str(d, "domain"));
            Assert.AreEqual("http://example.test:81/v1", Json.Str(d, "base_url"));
            Assert.AreEqual("k", Json.Str(d, "api_key"));
        }
    }

    [TestFixture]
    public class NativePlumbingTests
    {
        [Test]
        public void LoadsTheLibraryOfTheSameVersion()
        {
            Assert.AreEqual(2u, Bridge.AbiVersion);
            Assert.AreEqual(Constants.SdkVersion, Bridge.Version);
        }

        [Test]
        public async Task ValidationFailsBeforeAnyRequest()
        {
            try
            {
                await Sandbox.CreateAsync(new SandboxCreateOptions { Image = "a", SnapshotId = "b" });
                Assert.Fail("expected InvalidArgumentException");
            }
            catch (InvalidArgumentException e)
            {
                Assert.AreEqual(SandboxErrorCodes.InvalidArgument, e.Error.Code);
            }
        }

        [Test]
        public async Task ConnectionRefusedIsAnInternalConnectionError()
        {
            var cfg = new ConnectionConfig(new ConnectionConfigOptions { Domain = "127.0.0.1:1", RequestTimeoutSeconds = 5 });
            using (var m = SandboxManager.Create(new SandboxManagerOptions { ConnectionConfig = cfg }))
            {
                try
                {
                    await m.GetSandboxInfoAsync("nope");
                    Assert.Fail("expected an exception");
                }
                catch (SandboxException e)
                {
                    Assert.AreEqual("connection", e.Kind);
                }
            }
            Assert.AreEqual(0, Bridge.PendingCount);
        }

        [Test]
        public void AlreadyCancelledTokenNeverReachesNative()
        {
            var cfg = new ConnectionConfig(new ConnectionConfigOptions { Domain = "127.0.0.1:1" });
            using (var m = SandboxManager.Create(new SandboxManagerOptions { ConnectionConfig = cfg }))
            {
                var cts = new CancellationTokenSource();
                cts.Cancel();
                var t = m.GetSandboxInfoAsync("x", cts.Token);
                Assert.IsTrue(t.IsCanceled);
            }
        }
    }
}
