// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** One atomic change of a vault's CredentialBindings: add, replace and delete (by name). */
public final class CredentialBindingMutationSet {
    private final List<CredentialBinding> add;
    private final List<CredentialBinding> replace;
    private final List<String> delete;

    private CredentialBindingMutationSet(List<CredentialBinding> add, List<CredentialBinding> replace, List<String> delete) {
        this.add = add;
        this.replace = replace;
        this.delete = delete;
    }

    public static Builder builder() {
        return new Builder();
    }

    public List<CredentialBinding> getAdd() {
        return add;
    }

    public List<CredentialBinding> getReplace() {
        return replace;
    }

    public List<String> getDelete() {
        return delete;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("add", add == null ? null : Json.mapList(add, CredentialBinding::toJson),
                "replace", replace == null ? null : Json.mapList(replace, CredentialBinding::toJson), "delete", delete);
    }

    public static final class Builder {
        private List<CredentialBinding> add;
        private List<CredentialBinding> replace;
        private List<String> delete;

        public Builder add(List<CredentialBinding> add) {
            this.add = new ArrayList<>(add);
            return this;
        }

        public Builder replace(List<CredentialBinding> replace) {
            this.replace = new ArrayList<>(replace);
            return this;
        }

        public Builder delete(List<String> delete) {
            for (String s : delete) {
                if (s == null || s.trim().isEmpty()) {
                    throw new InvalidArgumentException("CredentialBinding delete name cannot be blank");
                }
            }
            this.delete = new ArrayList<>(delete);
            return this;
        }

        public Builder delete(String... delete) {
            return delete(Arrays.asList(delete));
        }

        public CredentialBindingMutationSet build() {
            return new CredentialBindingMutationSet(add, replace, delete);
        }
    }
}
