// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Alibaba Cloud OSS backend of a {@link Volume}, mounted with ossfs (inline credentials). */
public final class OSSFS {
    public static final String VERSION_1_0 = "1.0";
    public static final String VERSION_2_0 = "2.0";

    private final String bucket;
    private final String endpoint;
    private final String accessKeyId;
    private final String accessKeySecret;
    private final String version;
    private final List<String> options;

    private OSSFS(Builder b) {
        this.bucket = b.bucket;
        this.endpoint = b.endpoint;
        this.accessKeyId = b.accessKeyId;
        this.accessKeySecret = b.accessKeySecret;
        this.version = b.version;
        this.options = b.options;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getBucket() {
        return bucket;
    }

    public String getEndpoint() {
        return endpoint;
    }

    public String getAccessKeyId() {
        return accessKeyId;
    }

    public String getAccessKeySecret() {
        return accessKeySecret;
    }

    public String getVersion() {
        return version;
    }

    public List<String> getOptions() {
        return options;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("bucket", bucket, "endpoint", endpoint, "access_key_id", accessKeyId,
                "access_key_secret", accessKeySecret, "version", version);
        if (options != null) {
            m.put("options", options);
        }
        return m;
    }

    @Override
    public String toString() {
        return "OSSFS(bucket=" + bucket + ", endpoint=" + endpoint + ", version=" + version + ", accessKeySecret=***)";
    }

    private static String nonBlank(String v, String what) {
        if (v == null || v.trim().isEmpty()) {
            throw new InvalidArgumentException(what + " cannot be blank");
        }
        return v;
    }

    public static final class Builder {
        private String bucket;
        private String endpoint;
        private String accessKeyId;
        private String accessKeySecret;
        private String version = VERSION_2_0;
        private List<String> options;

        public Builder bucket(String bucket) {
            this.bucket = nonBlank(bucket, "Bucket");
            return this;
        }

        public Builder endpoint(String endpoint) {
            this.endpoint = nonBlank(endpoint, "Endpoint");
            return this;
        }

        public Builder accessKeyId(String accessKeyId) {
            this.accessKeyId = nonBlank(accessKeyId, "Access key id");
            return this;
        }

        public Builder accessKeySecret(String accessKeySecret) {
            this.accessKeySecret = nonBlank(accessKeySecret, "Access key secret");
            return this;
        }

        public Builder version(String version) {
            if (!VERSION_1_0.equals(version) && !VERSION_2_0.equals(version)) {
                throw new InvalidArgumentException("OSSFS version must be 1.0 or 2.0, got: " + version);
            }
            this.version = version;
            return this;
        }

        public Builder options(List<String> options) {
            this.options = new ArrayList<>(options);
            return this;
        }

        public OSSFS build() {
            if (bucket == null || endpoint == null || accessKeyId == null || accessKeySecret == null) {
                throw new InvalidArgumentException("OSSFS bucket, endpoint, accessKeyId and accessKeySecret must be specified");
            }
            return new OSSFS(this);
        }
    }
}
