package com.alibaba.opensandbox.sandbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxInternalException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The binary batch layout of {@code nextEvents} (Batch::encode), decoded without a server. */
class BatchLayoutTest {
    private static void item(ByteArrayOutputStream out, int kind, long ts, String text) {
        byte[] data = text.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(13).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) kind).putLong(ts).putInt(data.length);
        out.write(b.array(), 0, 13);
        out.write(data, 0, data.length);
    }

    @Test
    void linesAndItemsAreDispatchedInOrderUpToTheEnd() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(1);
        item(out, 0, 0, "{\"type\":\"init\",\"id\":\"ex-1\",\"timestamp\":5}");
        item(out, 1, 7, "héllo");
        item(out, 2, -1, "");
        item(out, 0, 0, "{\"type\":\"execution_complete\",\"execution_time_ms\":3,\"timestamp\":9}");
        item(out, 0, 0, "{\"type\":\"end\",\"ok\":true,\"execution\":null}");
        List<String> seen = new ArrayList<>();
        EventConsumer c = (type, text, ts, extra, number) -> seen.add(type + ":" + text + ":" + ts + ":" + number);
        Object[] end = new Object[1];
        assertTrue(NativeBridge.deliver(out.toByteArray(), c, end));
        assertEquals(List.of("0:ex-1:5:0", "1:héllo:7:0", "2::-1:0", "4:null:9:3"), seen);
        assertEquals("end", ((Map<?, ?>) end[0]).get("type"));
    }

    @Test
    void aBatchWithoutTheEndAsksForMoreAndADoneOneWithoutItFails() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        item(out, 1, 1, "a");
        List<String> seen = new ArrayList<>();
        Object[] end = new Object[1];
        assertFalse(NativeBridge.deliver(out.toByteArray(), (t, x, ts, e, n) -> seen.add(x), end));
        assertEquals(List.of("a"), seen);
        assertNull(end[0]);
        // A run without handlers: no consumer, lines are dropped.
        assertFalse(NativeBridge.deliver(out.toByteArray(), null, end));
        assertThrows(SandboxInternalException.class, () -> NativeBridge.deliver(new byte[] {1}, null, end));
    }

    @Test
    void aHandlersCheckedExceptionIsWrapped() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        item(out, 1, 1, "a");
        Exception boom = new Exception("boom");
        SandboxInternalException e = assertThrows(SandboxInternalException.class,
                () -> NativeBridge.deliver(out.toByteArray(), (t, x, ts, ex, n) -> {
                    throw boom;
                }, new Object[1]));
        assertSame(boom, e.getCause());
    }
}
