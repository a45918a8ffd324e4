// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.transport;

/** Failure classification carried on {@link RetryEvent}. */
public enum RetryCause {
    PRE_SEND("pre_send"),
    OPAQUE_TRANSPORT("opaque_transport"),
    READ_TIMEOUT("read_timeout"),
    WRITE_TIMEOUT("write_timeout"),
    UNEXPECTED_EOF("unexpected_eof"),
    STATUS_408("status_408"),
    STATUS_425("status_425"),
    STATUS_429("status_429"),
    STATUS_500("status_500"),
    STATUS_502("status_502"),
    STATUS_503("status_503"),
    STATUS_504("status_504"),
    STATUS_OTHER("status_other");

    private final String value;

    RetryCause(String value) {
        this.value = value;
    }

    public String getValue() {
        return value;
    }

    /** The cause of an HTTP status. */
    public static RetryCause forStatus(int statusCode) {
        switch (statusCode) {
            case 408:
                return STATUS_408;
            case 425:
                return STATUS_425;
            case 429:
                return STATUS_429;
            case 500:
                return STATUS_500;
            case 502:
                return STATUS_502;
            case 503:
                return STATUS_503;
            case 504:
                return STATUS_504;
            default:
                return STATUS_OTHER;
        }
    }
}
