// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the native library once: from the path in the system property
 * {@value #PROPERTY} when set, else from the jar resource
 * {@code native/<os>-<arch>/libopensandbox_jvm.so} (extracted to a temporary file),
 * else from {@code java.library.path}.
 */
public final class NativeLoader {
    public static final String PROPERTY = "opensandbox.native.library";
    static final String NAME = "opensandbox_jvm";

    private static volatile boolean loaded;
    private static Throwable failure;

    private NativeLoader() {}

    /** The platform directory inside the jar, e.g. {@code linux-x86_64}. */
    public static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.contains("win") ? "windows" : os.contains("mac") ? "osx" : "linux";
        String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch_64" : arch;
        return o + "-" + a;
    }

    public static synchronized void load() {
        if (loaded) {
            return;
        }
        if (failure != null) {
            throw new UnsatisfiedLinkError("the OpenSandbox native library failed to load earlier: " + failure);
        }
        try {
            String path = System.getProperty(PROPERTY);
            if (path != null && !path.isEmpty()) {
                System.load(Path.of(path).toAbsolutePath().toString());
            } else if (!loadFromJar()) {
                System.loadLibrary(NAME);
            }
            loaded = true;
        } catch (Throwable t) {
            failure = t;
            throw t instanceof UnsatisfiedLinkError ? (UnsatisfiedLinkError) t
                    : (UnsatisfiedLinkError) new UnsatisfiedLinkError(t.toString()).initCause(t);
        }
    }

    private static boolean loadFromJar() throws IOException {
        String file = System.mapLibraryName(NAME);
        String resource = "/native/" + platform() + "/" + file;
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                return false;
            }
            Path tmp = Files.createTempFile("opensandbox-jvm-", "-" + file);
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toAbsolutePath().toString());
            return true;
        }
    }
}
