// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxInternalException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.ContentReplaceEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.EntryInfo;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.MoveEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.ReplaceResult;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.SearchEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.SetPermissionEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.WriteEntry;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.Charset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * File operations of one sandbox ({@code sandbox.files()}), optionally as a Linux user
 * ({@code sandbox.filesWithIdentity(uid, gid)}) or inside an isolated session's mounts
 * ({@code session.getFiles()}).
 */
public final class Filesystem {
    /** Bytes per JNI crossing of a streamed upload: a crossing and a queued chunk cost the
     * same whatever their size, so 1 MiB makes a quarter of the crossings 256 KiB did. */
    private static final int CHUNK = 1024 * 1024;
    private final long handle;
    /** Keys added to every op: {@code identity} or {@code isolated_session} (or none). */
    private final Map<String, Object> scope;

    /** Internal: use {@code sandbox.files()}. */
    public Filesystem(long handle) {
        this(handle, Map.of());
    }

    /** Internal: use {@code sandbox.filesWithIdentity(...)} or {@code session.getFiles()}. */
    public Filesystem(long handle, Map<String, Object> scope) {
        this.handle = handle;
        this.scope = Map.copyOf(scope);
    }

    private Map<String, Object> op(Object... kv) {
        Map<String, Object> m = Json.obj(kv);
        m.put("sandbox", handle);
        m.putAll(scope);
        return m;
    }

    private Map<String, Object> readArgs(String path, String range, Long offset, Long limit) {
        return op("path", path, "range", range, "offset", offset, "limit", limit);
    }

    // ---- reads ----

    public String readFile(String path, String encoding, String range, Long offset, Long limit) {
        byte[] b = readByteArray(path, range, offset, limit);
        return new String(b, Charset.forName(encoding == null ? "UTF-8" : encoding));
    }

    public String readFile(String path, String encoding, String range) {
        return readFile(path, encoding, range, null, null);
    }

    public String readFile(String path) {
        return readFile(path, "UTF-8", null, null, null);
    }

    public CompletableFuture<String> readFileAsync(String path) {
        return NativeBridge.invokeAsync("files.read_file", readArgs(path, null, null, null))
                .thenApply(o -> Json.str(((Map<?, ?>) o).get("text")));
    }

    public byte[] readByteArray(String path, String range, Long offset, Long limit) {
        return NativeBridge.readAll(readArgs(path, range, offset, limit));
    }

    public byte[] readByteArray(String path) {
        return readByteArray(path, null, null, null);
    }

    /** A stream over the download; chunks are pulled from the network as it is read. */
    public InputStream readStream(String path, String range, Long offset, Long limit) {
        long h = NativeBridge.openDownload(readArgs(path, range, offset, limit));
        return new InputStream() {
            private boolean closed;

            @Override
            public int read() {
                byte[] one = new byte[1];
                int n = read(one, 0, 1);
                return n <= 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (closed) {
                    return -1;
                }
                if (off < 0 || len < 0 || off + len > b.length) {
                    throw new IndexOutOfBoundsException();
                }
                return len == 0 ? 0 : NativeBridge.readDownload(h, b, off, len);
            }

            @Override
            public void close() {
                if (!closed) {
                    closed = true;
                    NativeBridge.closeDownload(h);
                }
            }
        };
    }

    public InputStream readStream(String path) {
        return readStream(path, null, null, null);
    }

    // ---- writes ----

    /** Writes the entries; in one request unless an entry streams (InputStream, File, Path). */
    public void write(List<WriteEntry> entries) {
        List<Object> json = new ArrayList<>();
        for (WriteEntry e : entries) {
            Object d = e.getData();
            if (d instanceof InputStream || d instanceof File || d instanceof Path) {
                writeFile(e);
                continue;
            }
            Map<String, Object> m = entryArgs(e);
            m.remove("sandbox");
            m.keySet().removeAll(scope.keySet());
            if (d instanceof byte[]) {
                m.put("data_b64", Base64.getEncoder().encodeToString((byte[]) d));
            } else {
                m.put("data", d == null ? "" : d.toString());
            }
            json.add(m);
        }
        if (!json.isEmpty()) {
            NativeBridge.invoke("files.write_files", op("entries", json));
        }
    }

    private Map<String, Object> entryArgs(WriteEntry e) {
        if (e.getPath() == null || e.getPath().isEmpty()) {
            throw new InvalidArgumentException("path must not be empty");
        }
        return op("path", e.getPath(), "mode", e.getMode(), "owner", e.getOwner(),
                "group", e.getGroup());
    }

    public void writeFile(WriteEntry entry) {
        Object d = entry.getData();
        Map<String, Object> args = entryArgs(entry);
        try {
            if (d instanceof byte[]) {
                NativeBridge.writeAll(args, (byte[]) d);
            } else if (d instanceof InputStream) {
                upload(args, (InputStream) d);
            } else if (d instanceof File || d instanceof Path) {
                Path p = d instanceof File ? ((File) d).toPath() : (Path) d;
                // A file of the default file system opens as a FileInputStream, whose
                // descriptor the library reads itself (upload); any other as a stream.
                try (InputStream in = p.getFileSystem() == java.nio.file.FileSystems.getDefault()
                        ? new FileInputStream(p.toFile()) : Files.newInputStream(p)) {
                    upload(args, in);
                }
            } else {
                NativeBridge.writeAll(args, (d == null ? "" : d.toString()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new SandboxInternalException("reading the upload source failed: " + e, e, null, null);
        }
    }

    public void writeFile(String path, Object data) {
        writeFile(WriteEntry.builder().path(path).data(data).build());
    }

    private void upload(Map<String, Object> args, InputStream in) throws IOException {
        // A plain FileInputStream (not a subclass, whose read may differ from the file's
        // bytes) of a regular file: the library reads the rest of the file from its
        // descriptor, at the wire's speed, with no chunk through JNI.
        if (in.getClass() == FileInputStream.class
                && NativeBridge.uploadFileDescriptor(args, ((FileInputStream) in).getFD())) {
            return;
        }
        long h = NativeBridge.openUpload(args);
        boolean done = false;
        try {
            byte[] buf = new byte[CHUNK];
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (n > 0 && !NativeBridge.writeUpload(h, buf, 0, n)) {
                    break; // the upload ended early; finishing reports why
                }
            }
            done = true;
            NativeBridge.finishUpload(h);
        } finally {
            if (!done) {
                NativeBridge.abortUpload(h);
            }
        }
    }

    /** Creates directories (each entry's path, mode, owner, group). */
    public void createDirectories(List<WriteEntry> entries) {
        List<Object> json = new ArrayList<>();
        for (WriteEntry e : entries) {
            json.add(Json.obj("path", e.getPath(), "mode", e.getMode(), "owner", e.getOwner(), "group", e.getGroup()));
        }
        NativeBridge.invoke("files.create_directories", op("entries", json));
    }

    // ---- deletes and changes ----

    public void deleteFiles(List<String> paths) {
        NativeBridge.invoke("files.delete_files", op("paths", paths));
    }

    public void deleteDirectories(List<String> paths) {
        NativeBridge.invoke("files.delete_directories", op("paths", paths));
    }

    public void moveFiles(List<MoveEntry> entries) {
        NativeBridge.invoke("files.move_files", op("entries", Json.mapList(entries, MoveEntry::toJson)));
    }

    public void setPermissions(List<SetPermissionEntry> entries) {
        NativeBridge.invoke("files.set_permissions",
                op("entries", Json.mapList(entries, SetPermissionEntry::toJson)));
    }

    public void replaceContents(List<ContentReplaceEntry> entries) {
        NativeBridge.invoke("files.replace_contents",
                op("entries", Json.mapList(entries, ContentReplaceEntry::toJson)));
    }

    public List<ReplaceResult> replaceContentsDetailed(List<ContentReplaceEntry> entries) {
        return Json.list(NativeBridge.invoke("files.replace_contents_detailed",
                op("entries", Json.mapList(entries, ContentReplaceEntry::toJson))),
                ReplaceResult::fromJson);
    }

    // ---- queries ----

    public List<EntryInfo> listDirectory(String path, Integer depth) {
        return Json.list(NativeBridge.invoke("files.list_directory", op("path", path, "depth", depth)),
                EntryInfo::fromJson);
    }

    public List<EntryInfo> listDirectory(String path) {
        return listDirectory(path, null);
    }

    public List<EntryInfo> search(SearchEntry entry) {
        return Json.list(NativeBridge.invoke("files.search",
                op("path", entry.getPath(), "pattern", entry.getPattern())), EntryInfo::fromJson);
    }

    /** Metadata of each path (Python calls this {@code get_file_info}). */
    public Map<String, EntryInfo> readFileInfo(List<String> paths) {
        Map<?, ?> m = (Map<?, ?>) NativeBridge.invoke("files.get_file_info", op("paths", paths));
        Map<String, EntryInfo> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            out.put(String.valueOf(e.getKey()), EntryInfo.fromJson(e.getValue()));
        }
        return out;
    }

    public CompletableFuture<Map<String, EntryInfo>> readFileInfoAsync(List<String> paths) {
        return NativeBridge.invokeAsync("files.get_file_info", op("paths", paths)).thenApply(o -> {
            Map<String, EntryInfo> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                out.put(String.valueOf(e.getKey()), EntryInfo.fromJson(e.getValue()));
            }
            return out;
        });
    }
}
