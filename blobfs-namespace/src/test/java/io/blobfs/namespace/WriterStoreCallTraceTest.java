package io.blobfs.namespace;

import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Review of stripes-writer, Q1: store calls of today's files (BFS1/BFS2 only) through
 * create/overwrite (striped, inline, positional), rename, renameOver, delete, with and
 * without transactions, written to $TRACE_OUT; run on main and on the branch, diffed.
 */
class WriterStoreCallTraceTest {
  @Test
  void traceOfTodaysFiles() throws Exception {
    StringBuilder out = new StringBuilder();
    for (boolean tx : new boolean[] {false, true}) {
      out.append("#### transactional=").append(tx).append('\n');
      out.append(trace(tx));
    }
    Files.writeString(Path.of(System.getenv().getOrDefault("TRACE_OUT", "/tmp/rw/trace.txt")),
        out.toString());
  }

  private String trace(boolean tx) throws Exception {
    InMemoryBlobStore mem =
        new InMemoryBlobStore("trace", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    List<String> log = Collections.synchronizedList(new ArrayList<>());
    Class<?>[] ifaces = tx ? new Class<?>[] {TransactionalBlobStore.class}
        : new Class<?>[] {BlobStore.class};
    BlobStore store = (BlobStore) Proxy.newProxyInstance(BlobStore.class.getClassLoader(),
        ifaces, (p, m, args) -> {
          StringBuilder s = new StringBuilder(m.getName());
          if (args != null) {
            for (Object a : args) {
              if (a instanceof String || a instanceof Enum<?> || a instanceof Number) {
                s.append(' ').append(a);
              } else if (a instanceof List<?> l) {
                s.append(' ').append(l);
              }
            }
          }
          if (!m.getName().equals("limits")) {
            log.add(s.toString());
          }
          try {
            return m.invoke(mem, args);
          } catch (InvocationTargetException e) {
            log.add("  threw " + e.getCause().getClass().getSimpleName());
            throw e.getCause();
          }
        });
    BlobNamespace ns = new BlobNamespace(store,
        new NamespaceOptions(256, 256, 64 << 10, 1024, false, 100), StoreCallCounters.NONE);
    byte[] data = new byte[3 * 256 + 5];
    byte[] small = new byte[40];
    log.add("## mkdirs");
    ns.mkdirs(FsPath.parse("/a"));
    String[][] steps = {{"/a/f", "big"}, {"/a/f", "big"}, {"/a/f", "small"},
        {"/a/f", "big"}, {"/a/h", "big"}, {"/a/i", "small"}, {"/a/h", "seek"}};
    for (String[] st : steps) {
      log.add("## create " + st[0] + " " + st[1]);
      try (FileWriter w = ns.create(FsPath.parse(st[0]), true)) {
        if (st[1].equals("big")) {
          w.write(data, 0, data.length);
        } else if (st[1].equals("small")) {
          w.write(small, 0, small.length);
        } else {
          w.seek(300);
          w.write(data, 300, 400);
          w.seek(0);
          w.write(data, 0, 300);
        }
      }
    }
    log.add("## rename f g");
    ns.rename(FsPath.parse("/a/f"), FsPath.parse("/a/g"));
    log.add("## renameOver g h");
    ns.renameOver(FsPath.parse("/a/g"), ns.getFileInfo(FsPath.parse("/a/h")));
    log.add("## delete h");
    ns.delete(FsPath.parse("/a/h"), false);
    log.add("## delete i");
    ns.delete(FsPath.parse("/a/i"), false);
    Map<String, String> ids = new HashMap<>();
    StringBuilder out = new StringBuilder();
    for (String line : log) {
      StringBuilder l = new StringBuilder();
      for (String part : line.split("(?<=[/ \\[,=])|(?=[/ \\],=])")) {
        l.append(part.length() > 12 && part.matches(".*\\d.*")
            ? ids.computeIfAbsent(part, k -> "#" + ids.size()) : part);
      }
      out.append(l).append('\n');
    }
    return out.toString();
  }
}
