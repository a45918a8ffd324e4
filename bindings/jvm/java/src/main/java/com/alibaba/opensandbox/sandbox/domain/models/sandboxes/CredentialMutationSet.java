// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** One atomic change of a vault's Credentials: add, replace and delete (by name). */
public final class CredentialMutationSet {
    private final List<Credential> add;
    private final List<Credential> replace;
    private final List<String> delete;

    private CredentialMutationSet(List<Credential> add, List<Credential> replace, List<String> delete) {
        this.add = add;
        this.replace = replace;
        this.delete = delete;
    }

    public static Builder builder() {
        return new Builder();
    }

    public List<Credential> getAdd() {
        return add;
    }

    public List<Credential> getReplace() {
        return replace;
    }

    public List<String> getDelete() {
        return delete;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("add", add == null ? null : Json.mapList(add, Credential::toJson),
                "replace", replace == null ? null : Json.mapList(replace, Credential::toJson), "delete", delete);
    }

    public static final class Builder {
        private List<Credential> add;
        private List<Credential> replace;
        private List<String> delete;

        public Builder add(List<Credential> add) {
            this.add = new ArrayList<>(add);
            return this;
        }

        public Builder replace(List<Credential> replace) {
            this.replace = new ArrayList<>(replace);
            return this;
        }

        public Builder delete(List<String> delete) {
            for (String s : delete) {
                if (s == null || s.trim().isEmpty()) {
                    throw new InvalidArgumentException("Credential delete name cannot be blank");
                }
            }
            this.delete = new ArrayList<>(delete);
            return this;
        }

        public Builder delete(String... delete) {
            return delete(Arrays.asList(delete));
        }

        public CredentialMutationSet build() {
            return new CredentialMutationSet(add, replace, delete);
        }
    }
}
