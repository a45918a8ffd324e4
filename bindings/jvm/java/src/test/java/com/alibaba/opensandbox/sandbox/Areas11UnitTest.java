package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.BindMount;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.CreateIsolatedSessionRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedOverlaySpec;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedRunRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedSessionState;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedWorkspaceSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CreateTemplateRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Credential;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialAuth;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBinding;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBindingMutationSet;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMatch;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialSubstitution;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultPatchRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultState;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CustomHeaderEntry;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Host;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.InlineCredentialSource;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.LifecycleHook;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.OSSFS;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PVC;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PlatformSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxImageAuth;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxImageSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PeriodicLifecycleHook;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxLifecycle;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateFormat;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplatePhase;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Volume;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The (1.1) models: builders check their input, and the op layer's argument keys come out. */
class Areas11UnitTest {

    @Test
    void templateRequestsCarryTheOpKeysAndCheckTheirInput() {
        CreateTemplateRequest r = CreateTemplateRequest.builder().image("python:3.11").publish("s3://b/p")
                .entrypoint("sleep", "infinity").env(Map.of("A", "1")).metadata(m -> m.put("team", "x"))
                .readiness(b -> b.probe("cmd://true").warmupSeconds(2)).format(TemplateFormat.NATIVE).build();
        assertEquals("{\"image\":\"python:3.11\",\"publish\":\"s3://b/p\",\"entrypoint\":[\"sleep\",\"infinity\"],"
                + "\"env\":{\"A\":\"1\"},\"metadata\":{\"team\":\"x\"},\"readiness\":{\"probe\":\"cmd://true\","
                + "\"warmup_seconds\":2},\"format\":\"native\"}", Json.write(r.toJson()));
        assertThrows(InvalidArgumentException.class, () -> CreateTemplateRequest.builder().image("x").build());
        assertThrows(InvalidArgumentException.class, () -> CreateTemplateRequest.builder().image(" "));
        assertThrows(InvalidArgumentException.class, () -> TemplateFilter.builder().page(0));
        assertThrows(InvalidArgumentException.class, () -> TemplateFilter.builder().pageSize(0));
        assertEquals("{\"metadata\":null,\"page\":2,\"page_size\":5}",
                Json.write(TemplateFilter.builder().page(2).pageSize(5).build().toJson()));
    }

    @Test
    void templateInfoParsesTheOpResult() {
        TemplateInfo t = TemplateInfo.fromJson(Json.parse("{\"template_id\":\"tpl_1\",\"image\":\"python:3.11\","
                + "\"publish\":\"s3://b\",\"format\":\"overlaybd\",\"status\":{\"phase\":\"Failed\",\"manifest_ref\":null,"
                + "\"message\":\"readiness probe failed\"},\"created_at\":\"2026-12-01T10:00:00Z\",\"updated_at\":null,"
                + "\"resource_limits\":{},\"entrypoint\":[\"a\"],\"env\":{\"K\":\"V\"},\"metadata\":{},"
                + "\"readiness\":{\"probe\":\"cmd://exit 3\",\"warmup_seconds\":2}}"));
        assertEquals("tpl_1", t.getTemplateId());
        assertEquals(TemplateFormat.OVERLAYBD, t.getFormat());
        assertEquals(TemplatePhase.FAILED, t.getStatus().getPhase());
        assertEquals("readiness probe failed", t.getStatus().getMessage());
        assertEquals(2026, t.getCreatedAt().getYear());
        assertNull(t.getUpdatedAt());
        assertEquals(Map.of("K", "V"), t.getEnv());
        assertEquals(2, t.getReadiness().getWarmupSeconds());
        assertNull(TemplateFormat.fromWire("zstd"));
    }

    @Test
    void sandboxBuilderSendsThe11KeysAndRefusesBadCombinations() {
        ConnectionConfig nowhere = ConnectionConfig.builder().domain("127.0.0.1:9").build();
        // A template stands in for the image; with a snapshot it is refused before any request.
        assertThrows(InvalidArgumentException.class,
                () -> Sandbox.builder().connectionConfig(nowhere).templateId("tpl_1").snapshotId("snap").build());
        assertThrows(InvalidArgumentException.class, () -> Sandbox.builder().templateId(" "));
        SandboxLifecycle l = SandboxLifecycle.builder()
                .preStart(LifecycleHook.builder().command("sh", "-c", "true").timeoutSeconds(30).build())
                .periodic(PeriodicLifecycleHook.builder().name(" tick ").schedule("@every 1s").command("true").build())
                .build();
        assertEquals("{\"pre_start\":{\"command\":[\"sh\",\"-c\",\"true\"],\"timeout_seconds\":30},\"periodic\":"
                + "[{\"name\":\"tick\",\"schedule\":\"@every 1s\",\"command\":[\"true\"],\"timeout_seconds\":null}]}",
                Json.write(l.toJson()));
        assertTrue(SandboxLifecycle.builder().build().isEmpty());
        PeriodicLifecycleHook tick = PeriodicLifecycleHook.builder().name("t").schedule("@every 1s").command("true").build();
        assertThrows(InvalidArgumentException.class, () -> SandboxLifecycle.builder().periodic(tick, tick));
        assertThrows(InvalidArgumentException.class, () -> LifecycleHook.builder().command(List.of()));
        assertThrows(InvalidArgumentException.class, () -> LifecycleHook.builder().build());
        assertEquals("{\"name\":\"data\",\"mount_path\":\"/mnt/d\",\"read_only\":true,\"sub_path\":null,\"host\":{\"path\":\"/srv\"}}",
                Json.write(Volume.builder().name("data").host(Host.of("/srv")).mountPath("/mnt/d").readOnly(true).build().toJson()));
        assertThrows(InvalidArgumentException.class,
                () -> Volume.builder().name("v").host(Host.of("/a")).pvc(PVC.of("c")).mountPath("/m").build());
        assertThrows(InvalidArgumentException.class, () -> Volume.builder().mountPath("relative"));
        assertThrows(InvalidArgumentException.class, () -> Host.of("relative"));
        OSSFS oss = OSSFS.builder().bucket("b").endpoint("oss-cn-hangzhou.aliyuncs.com").accessKeyId("id")
                .accessKeySecret("secret").build();
        assertEquals("{\"bucket\":\"b\",\"endpoint\":\"oss-cn-hangzhou.aliyuncs.com\",\"access_key_id\":\"id\","
                + "\"access_key_secret\":\"secret\",\"version\":\"2.0\"}", Json.write(oss.toJson()));
        assertFalse(oss.toString().contains("secret"));
        assertThrows(InvalidArgumentException.class, () -> OSSFS.builder().version("3.0"));
        assertThrows(InvalidArgumentException.class,
                () -> Volume.builder().name("v").host(Host.of("/a")).ossfs(oss).mountPath("/m").build());
        assertEquals("{\"claim_name\":\"c\",\"create_if_not_exists\":true,\"storage\":\"1Gi\"}",
                Json.write(PVC.builder().claimName("c").createIfNotExists(true).storage("1Gi").build().toJson()));
        assertEquals(Map.of("os", "linux", "arch", "arm64"), PlatformSpec.builder().os("linux").arch("arm64").build().toJson());
        assertThrows(InvalidArgumentException.class, () -> PlatformSpec.builder().os("darwin"));
        assertThrows(InvalidArgumentException.class, () -> PlatformSpec.builder().os("linux").build());
        SandboxImageSpec priv = SandboxImageSpec.builder().image("registry.example.com/app:1").auth("u", "p4ss").build();
        assertEquals("u", priv.getAuth().getUsername());
        assertFalse(priv.getAuth().toString().contains("p4ss"));
        assertThrows(InvalidArgumentException.class, () -> SandboxImageAuth.builder().username(" "));
    }

    @Test
    void vaultModelsUseTheWireNamesAndHideValues() {
        CredentialBinding b = CredentialBinding.builder().name("api")
                .match(CredentialMatch.builder().hosts("api.example.com").schemes(CredentialMatch.Scheme.HTTPS).build())
                .auth(CredentialAuth.apiKey("X-Api-Key", "gh")).build();
        assertEquals("{\"name\":\"api\",\"match\":{\"hosts\":[\"api.example.com\"],\"schemes\":[\"https\"],\"methods\":null,"
                + "\"paths\":null},\"auth\":{\"type\":\"apiKey\",\"credential\":\"gh\",\"name\":\"X-Api-Key\"}}",
                Json.write(b.toJson()));
        CredentialAuth subst = CredentialAuth.passthrough(List.of(CredentialSubstitution.builder().credential("gh")
                .placeholder("{{TOKEN}}").surfaces(CredentialSubstitution.Surface.HEADER, CredentialSubstitution.Surface.QUERY)
                .build()));
        assertEquals("[{\"credential\":\"gh\",\"placeholder\":\"{{TOKEN}}\",\"in\":[\"header\",\"query\"]}]",
                Json.write(subst.toJson().get("substitutions")));
        assertEquals("customHeaders", CredentialAuth.customHeaders(List.of(CustomHeaderEntry.builder().name("X-A")
                .credential("gh").build())).toJson().get("type"));
        Credential c = Credential.builder().name("gh").inlineSource("s3cr3t").build();
        assertFalse(c.getSource().toString().contains("s3cr3t"));
        assertEquals("{\"name\":\"gh\",\"source\":{\"type\":\"inline\",\"value\":\"s3cr3t\"}}", Json.write(c.toJson()));
        assertThrows(InvalidArgumentException.class, () -> CredentialAuth.builder().type(CredentialAuth.Type.API_KEY)
                .credential("gh").build());
        assertThrows(InvalidArgumentException.class, () -> CredentialAuth.builder().build());
        assertThrows(InvalidArgumentException.class, () -> CredentialMatch.builder().build());
        assertThrows(InvalidArgumentException.class, () -> CredentialMatch.builder().hosts(List.of()));
        assertThrows(InvalidArgumentException.class, () -> InlineCredentialSource.builder().type("vault"));
        assertThrows(InvalidArgumentException.class, () -> Credential.builder().name("x").build());
        CredentialVaultPatchRequest p = CredentialVaultPatchRequest.builder().expectedRevision(3)
                .bindings(CredentialBindingMutationSet.builder().delete("subst").build()).build();
        assertEquals("{\"expected_revision\":3,\"bindings\":{\"add\":null,\"replace\":null,\"delete\":[\"subst\"]}}",
                Json.write(p.toJson()));
        CredentialVaultState st = CredentialVaultState.fromJson(Json.parse("{\"revision\":2,\"credentials\":[{\"name\":\"gh\","
                + "\"source_type\":\"inline\",\"revision\":1}],\"bindings\":[{\"name\":\"api\",\"revision\":2,\"match\":"
                + "{\"hosts\":[\"a.example.com\"],\"schemes\":[\"https\"],\"methods\":[],\"paths\":[\"/*\"]},"
                + "\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Api-Key\"}}]}"));
        assertEquals(2, st.getRevision());
        assertEquals("inline", st.getCredentials().get(0).getSourceType());
        assertEquals(List.of(CredentialMatch.Scheme.HTTPS), st.getBindings().get(0).getMatch().getSchemes());
        assertEquals("apiKey", st.getBindings().get(0).getAuth().getType());
    }

    @Test
    void isolatedRequestsCheckTheirInput() {
        CreateIsolatedSessionRequest r = CreateIsolatedSessionRequest.builder()
                .workspace(new IsolatedWorkspaceSpec("/workspace/a", "rw")).profile("balanced").uid(1000).gid(1000)
                .binds(List.of(new BindMount("/data", null, true))).build();
        Map<String, Object> j = r.toJson();
        assertEquals(Map.of("path", "/workspace/a", "mode", "rw"), j.get("workspace"));
        assertEquals("balanced", j.get("profile"));
        assertEquals(1000, j.get("uid"));
        assertTrue(Json.write(j).contains("\"binds\":[{\"source\":\"/data\",\"dest\":null,\"readonly\":true}]"));
        assertEquals("[{\"path\":\"/w\",\"mode\":null,\"persist\":null}]", Json.write(CreateIsolatedSessionRequest.builder()
                .overlays(new IsolatedOverlaySpec("/w")).build().toJson().get("overlays")));
        assertThrows(InvalidArgumentException.class, () -> CreateIsolatedSessionRequest.builder().build());
        assertThrows(InvalidArgumentException.class, () -> new IsolatedWorkspaceSpec(" "));
        assertThrows(InvalidArgumentException.class, () -> new IsolatedRunRequest(""));
        assertThrows(InvalidArgumentException.class, () -> new IsolatedRunRequest("true", null, 0));
        IsolatedSessionState s = IsolatedSessionState.fromJson(Json.parse("{\"status\":\"active\",\"profile\":\"strict\","
                + "\"uid\":1000,\"share_net\":true,\"idle_remaining_seconds\":null,\"last_run_at\":\"2026-12-01T10:00:00Z\"}"));
        assertEquals("active", s.getStatus());
        assertEquals(1000, s.getUid());
        assertTrue(s.getShareNet());
        assertNull(s.getIdleRemainingSeconds());
        assertEquals(2026, s.getLastRunAt().getYear());
    }
}
