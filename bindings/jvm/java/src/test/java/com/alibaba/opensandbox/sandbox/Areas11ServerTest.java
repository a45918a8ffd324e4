package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CreateTemplateRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Credential;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialAuth;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBinding;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMatch;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMutationSet;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialProxyConfig;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultState;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.DiagnosticContent;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.LifecycleHook;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkRule;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.OSSFS;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PVC;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Volume;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PagedTemplateInfos;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxLifecycle;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplatePhase;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** The (1.1) areas against the reference server (isolation and identity files need runc: conformance). */
@EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
class Areas11ServerTest {

    @Test
    void templateBuildListCreateFromAndDelete() throws Exception {
        String tag = "jvm-" + UUID.randomUUID();
        try (SandboxManager m = SandboxManager.builder().build()) {
            TemplateInfo t = m.createTemplate(CreateTemplateRequest.builder().image("python:3.11")
                    .publish("s3://jvm/" + tag).entrypoint("sleep", "infinity").env(Map.of("TPL_GREETING", "hi"))
                    .metadata(Map.of("suite", tag)).build());
            assertTrue(t.getTemplateId().startsWith("tpl_"), t.getTemplateId());
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!TemplatePhase.SUCCEEDED.equals(t.getStatus().getPhase())) {
                assertTrue(!TemplatePhase.FAILED.equals(t.getStatus().getPhase()), t.getStatus().getMessage());
                assertTrue(System.nanoTime() < deadline, "the template build did not finish");
                Thread.sleep(200);
                t = m.getTemplate(t.getTemplateId());
            }
            assertTrue(t.getStatus().getManifestRef().startsWith("local:templates/"), t.getStatus().getManifestRef());
            PagedTemplateInfos page = m.listTemplates(TemplateFilter.builder().metadata(Map.of("suite", tag)).build());
            assertEquals(1, page.getTemplateInfos().size());
            assertEquals(t.getTemplateId(), page.getTemplateInfos().get(0).getTemplateId());

            final String id = t.getTemplateId();
            Sandbox sb = Sandbox.builder().templateId(id).build();
            try {
                assertEquals("hi", sb.commands().run("echo \"$TPL_GREETING\"").getLogs().getStdout().get(0).getText());
                assertEquals(List.of("sleep", "infinity"), sb.getInfo().getEntrypoint());
                // A template-backed sandbox has no egress sidecar: refused locally, as officially.
                assertThrows(SandboxException.class, sb::credentialVault);
                assertEquals("template", sb.getOrigin());
                // A new handle learns it from the server's OPEN-SANDBOX-ORIGIN header.
                Sandbox again = Sandbox.connector().sandboxId(sb.getId()).skipHealthCheck().connect();
                try {
                    assertEquals("template", again.getOrigin());
                    assertThrows(SandboxException.class, again::credentialVault);
                    assertNotNull(again.getEgressPolicy());
                } finally {
                    again.close();
                }
                m.deleteTemplate(id);
                SandboxApiException gone = assertThrows(SandboxApiException.class, () -> m.getTemplate(id));
                assertEquals(404, gone.getStatusCode());
                assertEquals(0, sb.commands().run("true").getExitCode());
            } finally {
                sb.kill();
                sb.close();
            }
        }
    }

    @Test
    void credentialVaultRoundTrip() {
        // The proxy needs an egress policy (the server answers 400 otherwise).
        Sandbox sb = Sandbox.builder().image("python:3.11").credentialProxy(CredentialProxyConfig.enabled())
                .networkPolicy(p -> p.defaultAction("deny").addEgress(NetworkRule.builder().action("allow")
                        .target("*.example.com").build()))
                .build();
        try {
            CredentialVaultState st = sb.credentialVault().create(
                    List.of(Credential.builder().name("gh").inlineSource("jvm-secret-1").build()),
                    List.of(CredentialBinding.builder().name("api")
                            .match(CredentialMatch.builder().hosts("api.example.com").build())
                            .auth(CredentialAuth.apiKey("x-api-key", "gh")).build()));
            assertEquals(1, st.getRevision());
            assertEquals("inline", st.getCredentials().get(0).getSourceType());
            assertEquals("apiKey", st.getBindings().get(0).getAuth().getType());
            assertEquals(List.of(CredentialMatch.Scheme.HTTPS), st.getBindings().get(0).getMatch().getSchemes());
            SandboxApiException stale = assertThrows(SandboxApiException.class, () -> sb.credentialVault().patch(9,
                    CredentialMutationSet.builder().delete("gh").build(), null));
            assertEquals(409, stale.getStatusCode());
            st = sb.credentialVault().patch(1, CredentialMutationSet.builder()
                    .add(List.of(Credential.builder().name("two").inlineSource("jvm-secret-2").build())).build(), null);
            assertEquals(2, st.getRevision());
            assertEquals(2, sb.credentialVault().listCredentials().size());
            assertEquals("gh", sb.credentialVault().getCredential("gh").getName());
            assertEquals("api", sb.credentialVault().listBindings().get(0).getName());
            assertEquals(404, assertThrows(SandboxApiException.class, () -> sb.credentialVault().getBinding("nope"))
                    .getStatusCode());
            sb.credentialVault().delete();
            assertEquals(404, assertThrows(SandboxApiException.class, () -> sb.credentialVault().get()).getStatusCode());
        } finally {
            sb.kill();
            sb.close();
        }
    }

    @Test
    void lifecycleHooksRunAndShowInDiagnostics() {
        Sandbox sb = Sandbox.builder().image("python:3.11").resourceRequests(Map.of("cpu", "250m"))
                .lifecycle(SandboxLifecycle.builder()
                        .preStart(LifecycleHook.builder().command("sh", "-c", "echo jvm-pre-start").timeoutSeconds(30).build())
                        .build())
                .build();
        try {
            DiagnosticContent logs = sb.diagnostics().getLogs(sb.getId(), "all");
            assertNotNull(logs.getContent());
            assertTrue(logs.getContent().contains("[lifecycle preStart] stdout: jvm-pre-start"), logs.getContent());
            assertTrue(sb.diagnostics().getEvents(sb.getId(), "all").getContent().contains("HOOK_PRESTART"));
        } finally {
            sb.kill();
            sb.close();
        }
        SandboxApiException failed = assertThrows(SandboxApiException.class, () -> Sandbox.builder().image("python:3.11")
                .lifecycle(SandboxLifecycle.builder().preStart(LifecycleHook.builder().command("sh", "-c", "exit 4").build())
                        .build())
                .build());
        assertTrue(failed.getMessage().contains("exited with code 4"), failed.getMessage());
    }

    @Test
    void pvcVolumesAreSharedBetweenSandboxes() {
        String claim = "jvm-" + Long.toHexString(System.nanoTime());
        Volume shared = Volume.builder().name("shared").pvc(PVC.builder().claimName(claim).deleteOnSandboxTermination(false)
                .build()).mountPath("/mnt/shared").build();
        Sandbox a = Sandbox.builder().image("python:3.11").volume(shared).build();
        try {
            a.files().writeFile("/mnt/shared/hello.txt", "from a");
            Sandbox b = Sandbox.builder().image("python:3.11").volume(Volume.builder().name("ro").pvc(PVC.of(claim))
                    .mountPath("/mnt/ro").readOnly(true).build()).build();
            try {
                assertEquals("from a", b.files().readFile("/mnt/ro/hello.txt"));
                assertTrue(b.commands().run("touch /mnt/ro/x").getExitCode() != 0, "a read-only volume took a write");
            } finally {
                b.kill();
                b.close();
            }
        } finally {
            a.kill();
            a.close();
        }
        // This server does no FUSE mounts: an OSSFS volume is refused, loudly.
        SandboxApiException oss = assertThrows(SandboxApiException.class, () -> Sandbox.builder().image("python:3.11")
                .volume(Volume.builder().name("oss").ossfs(OSSFS.builder().bucket("b").endpoint("e").accessKeyId("i")
                        .accessKeySecret("s").build()).mountPath("/mnt/oss").build())
                .build());
        assertEquals(400, oss.getStatusCode());
    }

    @Test
    void isolationAndIdentityFilesReachTheServer() {
        Sandbox sb = Sandbox.builder().image("python:3.11").build();
        try {
            // Without an OCI runtime the sandbox has no isolator: the capabilities say so.
            assertNotNull(sb.isolation().capabilities().getAvailable());
            assertInstanceOf(List.class, sb.isolation().list());
            assertThrows(com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException.class,
                    () -> sb.filesWithIdentity(-1, 0));
            assertThrows(com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException.class,
                    () -> sb.filesWithIdentity(0, 4294967295L));
        } finally {
            sb.kill();
            sb.close();
        }
    }
}
