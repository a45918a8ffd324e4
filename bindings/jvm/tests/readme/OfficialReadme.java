// The Java examples of the official Kotlin SDK's README (opensandbox-group/OpenSandbox,
// sdks/sandbox/kotlin/README.md, Apache-2.0), each section's code block verbatim inside a
// method, against this package. Deviations, all marked "ADAPTED:":
// - the server is the test's reference server (OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY)
//   instead of "api.opensandbox.io" / "your-key";
// - a stray `import` line inside a code block moves to the imports;
// - `ConnectionConfig.connectionPool(okhttp3.ConnectionPool)` is left out (no OkHttp here);
// - the pool example waits for its first idle sandbox before `acquire(FAIL_FAST)`, and the
//   `SandboxPoolManager` example uses an in-memory store for `redisStore`.
// Run by bindings/jvm/tests/readme.sh; each section prints "README <n> ok".

import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.SandboxManager;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.EntryInfo;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.SearchEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.WriteEntry;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Credential;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialAuth;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBinding;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMatch;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultCreateRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkPolicy;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkRule;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PagedSandboxInfos;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxEndpoint;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxState;
import com.alibaba.opensandbox.sandbox.domain.pool.AcquirePolicy;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolCreationSpec;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyOptions;
import com.alibaba.opensandbox.sandbox.infrastructure.pool.InMemoryPoolStateStore;
import com.alibaba.opensandbox.sandbox.pool.SandboxPool;
import com.alibaba.opensandbox.sandbox.pool.SandboxPoolManager;
import java.time.Duration;
import java.util.List;
import java.util.Map;

public class OfficialReadme {
    // ADAPTED: the reference server of the test.
    static final String DOMAIN = System.getenv("OPEN_SANDBOX_DOMAIN");
    static final String KEY = System.getenv("OPEN_SANDBOX_API_KEY");

    static ConnectionConfig config = ConnectionConfig.builder().domain(DOMAIN).apiKey(KEY).build();

    public static void main(String[] args) throws Exception {
        quickStart();
        Sandbox sandbox = Sandbox.builder().connectionConfig(config).image("ubuntu").build();
        try {
            lifecycle(sandbox);
            customHealthCheck();
            commands(sandbox);
            files(sandbox);
            configuration();
            creationConfiguration();
            egress();
            credentialVault();
            pool();
        } finally {
            sandbox.kill();
            sandbox.close();
        }
        management();
        System.out.println("README all ok");
    }

    /** Quick Start (the class body of the README's QuickStart.main). */
    static void quickStart() {
        // 1. Configure connection
        ConnectionConfig config = ConnectionConfig.builder()
            .domain(DOMAIN) // ADAPTED: "api.opensandbox.io"
            .apiKey(KEY) // ADAPTED: "your-api-key"
            .build();

        // 2. Create a Sandbox using try-with-resources
        try (Sandbox sandbox = Sandbox.builder()
                .connectionConfig(config)
                .image("ubuntu")
                .build()) {

            // 3. Execute a shell command
            Execution execution = sandbox
                    .commands()
                    .run("echo 'Hello Sandbox!'");

            // 4. Print output
            System.out.println(execution.getLogs().getStdout().get(0).getText());

            // 5. Cleanup (sandbox.close() called automatically)
            // Note: kill() must be called explicitly if you want to terminate the remote sandbox instance immediately
            sandbox.kill();
        } catch (SandboxException e) {
            // Handle Sandbox specific exceptions
            System.err.println("Sandbox Error: [" + e.getError().getCode() + "] " + e.getError().getMessage());
            System.err.println("Request ID: " + e.getRequestId());
            throw e; // ADAPTED: a test must fail here
        } catch (Exception e) {
            e.printStackTrace();
            throw new AssertionError(e); // ADAPTED: a test must fail here
        }
        System.out.println("README quickstart ok");
    }

    /** 1. Lifecycle Management. */
    static void lifecycle(Sandbox sandbox) {
        // Renew the sandbox
        // This resets the expiration time to (current time + duration)
        sandbox.renew(Duration.ofMinutes(30));

        // Pause execution (suspends all processes)
        sandbox.pause();

        // Resume execution
        sandbox.resume();

        // Get current status
        SandboxInfo info = sandbox.getInfo();
        System.out.println("State: " + info.getStatus().getState());
        System.out.println("Expires: " + info.getExpiresAt()); // null when manual cleanup mode is used

        Sandbox manual = Sandbox.builder()
            .connectionConfig(config)
            .image("ubuntu")
            .timeout(null)
            .build();

        check(manual.getInfo().getExpiresAt() == null, "manual cleanup has no expiry");
        manual.kill();
        manual.close();
        System.out.println("README 1 ok");
    }

    /** 2. Custom Health Check. */
    static void customHealthCheck() {
        Sandbox sandbox = Sandbox.builder()
            .connectionConfig(config)
            .image("nginx:latest")
            // Custom check: Wait for port 80 to be accessible
            .healthCheck(sbx -> {
                try {
                    // 1. Get the external mapped address for port 80
                    SandboxEndpoint endpoint = sbx.getEndpoint(80);

                    // 2. Perform your connection check (e.g. HTTP request, Socket connect)
                    // return checkConnection(endpoint.getEndpoint());
                    return true;
                } catch (Exception e) {
                    return false;
                }
            })
            .build();

        sandbox.kill();
        sandbox.close();
        System.out.println("README 2 ok");
    }

    /** 3. Command Execution & Streaming. */
    static void commands(Sandbox sandbox) {
        // Create handlers for streaming output
        ExecutionHandlers handlers = ExecutionHandlers.builder()
            .onStdout(msg -> System.out.println("STDOUT: " + msg.getText()))
            .onStderr(msg -> System.err.println("STDERR: " + msg.getText()))
            .onExecutionComplete(complete ->
                System.out.println("Command finished in " + complete.getExecutionTimeInMillis() + "ms")
            )
            .build();

        // Execute command with handlers
        RunCommandRequest request = RunCommandRequest.builder()
            .command("for i in {1..5}; do echo \"Count $i\"; sleep 0.5; done")
            .handlers(handlers)
            .build();

        sandbox.commands().run(request);
        System.out.println("README 3 ok");
    }

    /** 4. Comprehensive File Operations. */
    static void files(Sandbox sandbox) {
        // 1. Write file
        sandbox.files().write(List.of(
            WriteEntry.builder()
                .path("/tmp/hello.txt")
                .data("Hello World")
                .mode(644)
                .build()
        ));

        // 2. Read file
        String content = sandbox.files().readFile("/tmp/hello.txt", "UTF-8", null);
        System.out.println("Content: " + content);

        // 3. List/Search files
        List<EntryInfo> files = sandbox.files().search(
            SearchEntry.builder()
                .path("/tmp")
                .pattern("*.txt")
                .build()
        );
        files.forEach(f -> System.out.println("Found: " + f.getPath()));

        // 4. Delete file
        sandbox.files().deleteFiles(List.of("/tmp/hello.txt"));

        check("Hello World".equals(content), "read back what was written");
        check(files.stream().anyMatch(f -> f.getPath().endsWith("/tmp/hello.txt")), "search finds the file");
        System.out.println("README 4 ok");
    }

    /** 5. Sandbox Management (Admin): run last, it kills every running sandbox. */
    static void management() {
        SandboxManager manager = SandboxManager.builder()
            .connectionConfig(config)
            .build();

        // ADAPTED: `import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxState;` moved up

        // ...

        // List running sandboxes
        PagedSandboxInfos sandboxes = manager.listSandboxInfos(
            SandboxFilter.builder()
                .states(SandboxState.RUNNING)
                .pageSize(10)
                .page(1)
                .build()
        );

        sandboxes.getSandboxInfos().forEach(info -> {
            System.out.println("Found sandbox: " + info.getId());
            // Perform admin actions
            manager.killSandbox(info.getId());
        });

        // Try-with-resources will automatically call manager.close()
        // manager.close();
        manager.close(); // ADAPTED: the README's manager is not in a try-with-resources
        System.out.println("README 5 ok");
    }

    /** 6. Sandbox Pool (Client-Side). */
    static void pool() throws InterruptedException {
        SandboxPool pool = SandboxPool.builder()
            .poolName("demo-pool")
            .ownerId("worker-1")
            .maxIdle(3)
            .warmupReadyTimeout(Duration.ofSeconds(45))
            .stateStore(new InMemoryPoolStateStore()) // single-node store
            .connectionConfig(config)
            .creationSpec(
                PoolCreationSpec.builder()
                    .image("ubuntu:22.04")
                    .entrypoint(java.util.List.of("tail", "-f", "/dev/null"))
                    .extension("storage.id", "dataset-001")
                    .build()
            )
            .build();

        pool.start();
        // ADAPTED: FAIL_FAST needs an idle sandbox; wait for the first warmup.
        for (int i = 0; i < 300 && pool.snapshot().getIdleCount() == 0; i++) {
            Thread.sleep(100);
        }
        Sandbox sb = pool.acquire(Duration.ofMinutes(10), AcquirePolicy.FAIL_FAST);
        try {
            sb.commands().run("echo pool-ok");
        } finally {
            sb.kill();
            sb.close();
        }
        pool.shutdown(true);

        InMemoryPoolStateStore redisStore = new InMemoryPoolStateStore(); // ADAPTED: no Redis here
        SandboxPoolManager poolManager = SandboxPoolManager.builder()
            .stateStore(redisStore)
            .connectionConfig(config)
            .ownerId("deploy-job-123")
            .build();

        poolManager.destroy(
            "old-pool",
            new PoolDestroyOptions()
        );
        System.out.println("README 6 ok");
    }

    /** Configuration 1. Connection Configuration. */
    static void configuration() {
        // 1. Basic configuration
        ConnectionConfig config = ConnectionConfig.builder()
            .apiKey(KEY) // ADAPTED: "your-key"
            .domain(DOMAIN) // ADAPTED: "api.opensandbox.io"
            .requestTimeout(Duration.ofSeconds(60))
            .build();

        // 2. Advanced: Shared Connection Pool
        // ADAPTED: `new ConnectionPool(50, 30, TimeUnit.SECONDS)` and `.connectionPool(sharedPool)` left out
        // (no OkHttp here: configurations share the native pool).
        ConnectionConfig sharedConfig = ConnectionConfig.builder()
            .apiKey(KEY)
            .domain(DOMAIN)
            .headers(Map.of(
                "X-Custom-Header", "value",
                "X-Request-ID", "trace-123"
            ))
            .build();

        check(config.getRequestTimeout().equals(Duration.ofSeconds(60)), "request timeout");
        check("value".equals(sharedConfig.getHeaders().get("X-Custom-Header")), "headers");
        System.out.println("README config 1 ok");
    }

    /** Configuration 2. Sandbox Creation Configuration. */
    static void creationConfiguration() {
        Sandbox sandbox = Sandbox.builder()
            .connectionConfig(config)
            .image("python:3.11")
            .timeout(Duration.ofMinutes(30))
            .resource(map -> {
                map.put("cpu", "2");
                map.put("memory", "4Gi");
            })
            .env("PYTHONPATH", "/app")
            .metadata("project", "demo")
            .extension("storage.id", "dataset-001")
            .networkPolicy(
                NetworkPolicy.builder()
                    .defaultAction(NetworkPolicy.DefaultAction.DENY)
                    .addEgress(
                        NetworkRule.builder()
                            .action(NetworkRule.Action.ALLOW)
                            .target("pypi.org")
                            .build()
                    )
                    .build()
            )
            .build();

        check("demo".equals(sandbox.getInfo().getMetadata().get("project")), "metadata");
        egressSandbox = sandbox;
        System.out.println("README config 2 ok");
    }

    static Sandbox egressSandbox;

    /** Configuration 3. Runtime Egress Policy Updates (on the sandbox of section 2). */
    static void egress() {
        Sandbox sandbox = egressSandbox;
        NetworkPolicy policy = sandbox.getEgressPolicy();

        sandbox.patchEgressRules(
            List.of(
                NetworkRule.builder().action(NetworkRule.Action.ALLOW).target("www.github.com").build(),
                NetworkRule.builder().action(NetworkRule.Action.DENY).target("pypi.org").build()
            )
        );

        check("deny".equals(policy.getDefaultAction()), "the policy of the create request");
        NetworkPolicy after = sandbox.getEgressPolicy();
        check(after.getEgress().stream().anyMatch(r -> "www.github.com".equals(r.getTarget())), "patched");
        sandbox.kill();
        sandbox.close();
        System.out.println("README config 3 ok");
    }

    /** Configuration 4. Credential Vault. */
    static void credentialVault() {
        Sandbox sandbox = Sandbox.builder()
            .connectionConfig(config)
            .image("python:3.11")
            .networkPolicy(
                NetworkPolicy.builder()
                    .defaultAction(NetworkPolicy.DefaultAction.DENY)
                    .addEgress(
                        NetworkRule.builder()
                            .action(NetworkRule.Action.ALLOW)
                            .target("api.example.com")
                            .build()
                    )
                    .build()
            )
            .credentialProxyEnabled(true)
            .build();

        sandbox.credentialVault().create(
            CredentialVaultCreateRequest.builder()
                .credentials(
                    List.of(
                        Credential.builder()
                            .name("api-token")
                            .inlineSource("<token>")
                            .build()
                    )
                )
                .bindings(
                    List.of(
                        CredentialBinding.builder()
                            .name("api-token")
                            .match(
                                CredentialMatch.builder()
                                    .schemes(CredentialMatch.Scheme.HTTPS)
                                    .hosts("api.example.com")
                                    .paths("/v1/*")
                                    .build()
                            )
                            .auth(CredentialAuth.apiKey("x-api-key", "api-token"))
                            .build()
                    )
                )
                .build()
        );

        check(sandbox.credentialVault().listBindings().size() == 1, "one binding");
        sandbox.kill();
        sandbox.close();
        System.out.println("README config 4 ok");
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("README example check failed: " + what);
        }
    }
}
