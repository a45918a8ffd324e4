// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Which requests a Credential Vault binding applies to. */
public final class CredentialMatch {
    /** Request schemes (the port follows: HTTPS 443, HTTP 80). */
    public enum Scheme {
        HTTPS,
        HTTP;

        static Scheme fromWire(String s) {
            for (Scheme x : values()) {
                if (x.name().equalsIgnoreCase(s)) {
                    return x;
                }
            }
            return null;
        }
    }

    private final List<Scheme> schemes;
    private final List<String> hosts;
    private final List<String> methods;
    private final List<String> paths;

    private CredentialMatch(List<Scheme> schemes, List<String> hosts, List<String> methods, List<String> paths) {
        this.schemes = schemes;
        this.hosts = hosts;
        this.methods = methods;
        this.paths = paths;
    }

    public static Builder builder() {
        return new Builder();
    }

    public List<Scheme> getSchemes() {
        return schemes;
    }

    public List<String> getHosts() {
        return hosts;
    }

    public List<String> getMethods() {
        return methods;
    }

    public List<String> getPaths() {
        return paths;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("hosts", hosts);
        if (schemes != null) {
            List<String> s = new ArrayList<>();
            for (Scheme x : schemes) {
                s.add(x.name().toLowerCase(Locale.ROOT));
            }
            m.put("schemes", s);
        }
        m.put("methods", methods);
        m.put("paths", paths);
        return m;
    }

    /** Internal: from the op layer's form. */
    public static CredentialMatch fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        List<Scheme> schemes = m.get("schemes") == null ? null : Json.list(m.get("schemes"), o -> Scheme.fromWire(Json.str(o)));
        return new CredentialMatch(schemes, Json.strList(m.get("hosts")), Json.strList(m.get("methods")),
                Json.strList(m.get("paths")));
    }

    static List<String> nonBlank(List<String> l, String what) {
        if (l == null || l.isEmpty()) {
            throw new InvalidArgumentException("Credential match " + what + " cannot be empty");
        }
        for (String s : l) {
            if (s == null || s.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential match " + what + " cannot hold a blank value");
            }
        }
        return new ArrayList<>(l);
    }

    public static final class Builder {
        private List<Scheme> schemes;
        private List<String> hosts;
        private List<String> methods;
        private List<String> paths;

        public Builder schemes(List<Scheme> schemes) {
            if (schemes == null || schemes.isEmpty()) {
                throw new InvalidArgumentException("Credential match schemes cannot be empty when provided");
            }
            this.schemes = new ArrayList<>(schemes);
            return this;
        }

        public Builder schemes(Scheme... schemes) {
            return schemes(Arrays.asList(schemes));
        }

        public Builder hosts(List<String> hosts) {
            this.hosts = nonBlank(hosts, "hosts");
            return this;
        }

        public Builder hosts(String... hosts) {
            return hosts(Arrays.asList(hosts));
        }

        public Builder methods(List<String> methods) {
            this.methods = nonBlank(methods, "methods");
            return this;
        }

        public Builder methods(String... methods) {
            return methods(Arrays.asList(methods));
        }

        public Builder paths(List<String> paths) {
            this.paths = nonBlank(paths, "paths");
            return this;
        }

        public Builder paths(String... paths) {
            return paths(Arrays.asList(paths));
        }

        public CredentialMatch build() {
            if (hosts == null) {
                throw new InvalidArgumentException("Credential match hosts must be specified");
            }
            return new CredentialMatch(schemes, hosts, methods, paths);
        }
    }
}
