package io.blobfs.fuse;

import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.BlobStores;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A store mounted at a directory: the store, its namespace, the file system and the FUSE
 * session, closed in the order that loses nothing: every open file is published, then
 * the kernel lets go, then the store closes.
 */
public final class BlobMount implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(BlobMount.class.getName());
  private final BlobStore store;
  private final BlobFuseFs fs;
  private final FuseSession session;
  private final AtomicBoolean closed = new AtomicBoolean();

  private BlobMount(BlobStore store, BlobFuseFs fs, FuseSession session) {
    this.store = store;
    this.fs = fs;
    this.session = session;
  }

  /** Mounts store {@code storeName} as {@code conf} describes it. */
  public static BlobMount mount(Map<String, String> conf, String storeName, boolean paperMode,
      Path mountPoint) throws IOException {
    String type = MountConfig.parse(conf, storeName, Map.of()).storeType();
    BlobStoreProvider provider = BlobStores.provider(type);
    MountConfig c = MountConfig.parse(conf, storeName, provider.fileSystemDefaults());
    BlobStore store = provider.open(storeName, c.backend());
    try {
      return mount(store, c, paperMode, mountPoint);
    } catch (IOException | RuntimeException e) {
      store.close();
      throw e;
    }
  }

  static BlobMount mount(BlobStore store, MountConfig c, boolean paperMode, Path mountPoint)
      throws IOException {
    BlobNamespace ns = new BlobNamespace(store, c.namespace(), StoreCallCounters.NONE);
    FuseSession.Options options = FuseSession.Options.defaults().withPassthrough(c.passthrough());
    int blockSize = (int) Math.min(c.namespace().stripeSize(), options.maxWrite());
    BlobFuseFs fs = new BlobFuseFs(ns, new BlobFuseFs.Settings(paperMode, c.permission(),
        blockSize, c.stagingDir(), c.earlyUploadChunk(), c.takeover()));
    Files.createDirectories(mountPoint);
    FuseSession session = FuseSession.mount(fs, mountPoint.toString(), options);
    return new BlobMount(store, fs, session);
  }

  /** Whether the kernel agreed to FUSE passthrough (fs.blob.fuse.passthrough, Linux 6.9+). */
  public boolean passthrough() {
    return session.passthrough();
  }

  /** WRITE requests the kernel sent this mount so far (none for a passthrough handle). */
  long writeRequests() {
    return session.writeRequests();
  }

  /** Bytes the publications of staged files sent so far ({@link WriteStats}). */
  long publishedBytes() {
    return fs.writeStats().publishBytes();
  }

  /** Bytes the background (early) uploads sent so far ({@link WriteStats}). */
  long earlyBytes() {
    return fs.writeStats().earlyBytes();
  }

  /** Bytes of those that publications sent a second time (changed after their send). */
  long resentBytes() {
    return fs.writeStats().resentBytes();
  }

  /** Blocks until the mount goes away (close, or umount(8) from outside). */
  public void awaitUnmount() throws InterruptedException {
    session.join();
  }

  /** Publishes every open file, unmounts, closes the store. */
  @Override
  public void close() throws IOException {
    if (closed.compareAndSet(false, true)) {
      close(fs, session::close, store);
    }
  }

  /**
   * The close in its order: {@code fs}'s open files published, then {@code unmount}, then
   * they are published again before {@code store} closes. The second time is for writes
   * the unmount let through: a process in another mount namespace holding a copy of the
   * mount is served for the session's grace before the connection is aborted, and the
   * FLUSH or RELEASE that would publish its write then never comes. Once the unmount has
   * returned its workers are joined, so nothing writes after this publication.
   */
  static void close(BlobFuseFs fs, Runnable unmount, BlobStore store) throws IOException {
    try {
      fs.publishAll();
      unmount.run();
      List<FsPath> late = fs.publishAll();
      LOG.log(System.Logger.Level.INFO, "writes published: " + fs.writeSummary());
      if (!late.isEmpty()) {
        LOG.log(System.Logger.Level.WARNING, "written during the unmount, published after"
            + " it (their descriptors were still open): " + late);
      }
    } finally {
      // Also when a publication failed: no poll may start an upload on a closed store.
      fs.stopPolling();
      store.close();
    }
  }

  /**
   * {@code BlobMount --store embedded|tyr|rados|memory [--conf core-site.xml] [--name STORE]
   * [--dir DIR] [--address HOST:PORT] [--paper] MOUNTPOINT}. Runs until SIGTERM, SIGINT
   * or an unmount; on a signal every open file is published before the unmount.
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> conf = new HashMap<>();
    String store = null;
    String name = null;
    String dir = null;
    String address = null;
    boolean paper = false;
    Path mountPoint = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--store" -> store = args[++i];
        case "--conf" -> conf.putAll(MountConfig.readXml(Path.of(args[++i])));
        case "--name" -> name = args[++i];
        case "--dir" -> dir = args[++i];
        case "--address" -> address = args[++i];
        case "--paper" -> paper = true;
        default -> {
          if (args[i].startsWith("--") || mountPoint != null) {
            usage("unknown argument " + args[i]);
          }
          mountPoint = Path.of(args[i]);
        }
      }
    }
    if (mountPoint == null) {
      usage("no mount point");
    }
    if (name == null) {
      name = conf.getOrDefault("fs.blob.default.store", "default");
    }
    String prefix = MountConfig.STORE_PREFIX + name + ".";
    if (store != null) {
      conf.put(prefix + "type", store.equals("embedded") ? "tyr" : store);
    }
    if (dir != null) {
      conf.put(prefix + "embedded-dir", dir);
    }
    if (address != null) {
      conf.put(prefix + "address", address);
    }
    if ("embedded".equals(store) && !conf.containsKey(prefix + "embedded-dir")) {
      usage("--store embedded needs --dir DIR or " + prefix + "embedded-dir");
    }
    BlobMount mount = mount(conf, name, paper, mountPoint);
    System.out.println("blobfs-mount: store " + name + " mounted at " + mountPoint
        + (paper ? " (paper mode)" : ""));
    System.exit(runUntilStopped(mount));
  }

  /**
   * Waits for SIGTERM, SIGINT or SIGHUP, or for an unmount from outside, then closes the
   * mount in order (open files published, unmount, store closed) and returns the exit
   * status. The signals are handled here rather than by shutdown hooks, because hooks run
   * all at once: an embedded Týr node's hook could close the store while the files are
   * still being published.
   */
  private static int runUntilStopped(BlobMount mount) throws InterruptedException {
    java.util.concurrent.CompletableFuture<Integer> stop = new java.util.concurrent.CompletableFuture<>();
    for (String name : new String[] {"TERM", "INT", "HUP"}) {
      sun.misc.Signal.handle(new sun.misc.Signal(name), sig -> stop.complete(128 + sig.getNumber()));
    }
    Thread unmounted = new Thread(() -> {
      try {
        mount.awaitUnmount();
        stop.complete(0);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "blobfs-await-unmount");
    unmounted.setDaemon(true);
    unmounted.start();
    int status;
    try {
      status = stop.get();
    } catch (java.util.concurrent.ExecutionException e) {
      status = 1;
    }
    try {
      mount.close();
    } catch (IOException e) {
      System.err.println("blobfs-mount: closing the store failed: " + e);
      return 1;
    }
    System.out.println("blobfs-mount: unmounted, every open file published");
    return status;
  }

  private static void usage(String why) {
    System.err.println("blobfs-mount: " + why + "\nusage: blobfs-mount.sh --store"
        + " embedded|tyr|rados|memory [--conf core-site.xml] [--name STORE] [--dir DIR]"
        + " [--address HOST:PORT] [--paper] MOUNTPOINT");
    System.exit(2);
  }
}
