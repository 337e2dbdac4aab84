package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobStore;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The name index on the real cluster: crash points between the index step and the object
 * step (simulated by doing only one of them, the other through the rados CLI as another
 * client would), what scans show meanwhile, what fsck reports and repairs, paging across
 * shards, and the build of a pool written in pure-scan mode.
 */
@ExtendWith(CephClusterExtension.class)
class RadosIndexIT {
  private static CephTestCluster.Env env;
  private String namespace;
  private RadosBlobStore store;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  @BeforeEach
  void open() throws IOException {
    namespace = "index-" + System.nanoTime();
    store = open(Map.of());
  }

  @AfterEach
  void close() throws IOException {
    store.close();
  }

  private RadosBlobStore open(Map<String, String> extra) throws IOException {
    Map<String, String> o = CephTestCluster.storeOptions(env, env.pool(), namespace);
    o.putAll(extra);
    return (RadosBlobStore) new RadosBlobStoreProvider().open("t",
        new StoreOptions("fs.blob.store.t.", o));
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static List<String> scanAll(BlobStore s, String prefix, int page) throws IOException {
    List<String> out = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage p = s.scan(prefix, cursor, page);
      assertTrue(!p.keys().isEmpty() || p.isLast(), "an empty page before the last");
      out.addAll(p.keys());
      cursor = p.nextCursor();
    } while (cursor != null);
    return out;
  }

  /** The rados CLI as client.admin: another client, which knows nothing of the index. */
  private void rados(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("timeout", "60", "rados", "-c", env.conf(),
        "-p", env.pool()));
    if (env.cephx()) {
      cmd.addAll(List.of("--keyring", env.adminKeyring()));
    }
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), String.join(" ", cmd) + ": " + out);
  }

  private RadosIndexes.Fsck fsck(boolean repair) throws IOException {
    RadosBlobStore s = store;
    return s.withCluster((cluster, pool, keys) -> RadosIndexes.fsck(cluster, pool, keys,
        s.index(), Duration.ZERO, repair));
  }

  @Test
  void aCrashAfterTheIndexStepOfACreateShowsNoNameAndFsckRemovesTheEntry() throws Exception {
    store.put("n/dir/real", utf8("r"), PutMode.CREATE);
    store.index().beforeCreate("n/dir/ghost"); // then the writer dies: no object
    store.index().beforeCreate("n/empty/ghost");

    assertFalse(store.stat("n/dir/ghost").exists());
    assertEquals(List.of("n/dir/real"), scanAll(store, "n/dir/", 10));
    // A directory probe (one key wanted) does not take the entry for a name.
    ScanPage probe = store.scan("n/empty/", null, 1);
    assertEquals(List.of(), probe.keys());
    assertTrue(probe.isLast());

    RadosIndexes.Fsck found = fsck(false);
    assertEquals(2, found.stalePending(), found.toString());
    assertTrue(found.consistent(), found.toString());
    RadosIndexes.Fsck repaired = fsck(true);
    assertEquals(2, repaired.stalePending(), repaired.toString());
    RadosIndexes.Fsck after = fsck(false);
    assertEquals(0, after.stalePending(), after.toString());
    assertEquals(1, after.entries(), after.toString());
    assertEquals(List.of("n/dir/real"), scanAll(store, "n/", 10));
  }

  @Test
  void aCrashAfterTheObjectStepOfADeleteShowsNoNameAndFsckRemovesTheEntry() throws Exception {
    store.put("n/dir/a", utf8("a"), PutMode.CREATE);
    store.put("n/dir/b", utf8("b"), PutMode.CREATE);
    store.index().beforeDelete("n/dir/a");
    rados("-N", namespace + ".n", "rm", "dir/a"); // the object step; then the deleter dies

    assertEquals(List.of("n/dir/b"), scanAll(store, "n/dir/", 10));
    RadosIndexes.Fsck repaired = fsck(true);
    assertEquals(1, repaired.stalePending(), repaired.toString());
    assertTrue(repaired.consistent(), repaired.toString());
    assertEquals(1, fsck(false).entries());
  }

  @Test
  void aCrashBeforeADeleteSettlesKeepsTheNameWhileItsObjectExists() throws Exception {
    store.put("n/dir/a", utf8("a"), PutMode.CREATE);
    store.index().beforeDelete("n/dir/a"); // the deleter dies before the object step
    assertEquals(List.of("n/dir/a"), scanAll(store, "n/dir/", 10));
    RadosIndexes.Fsck repaired = fsck(true); // grace 0: that delete is long over
    assertEquals(0, repaired.stalePending(), repaired.toString());
    assertEquals(1, repaired.committedNow(), "an old deleting mark over an object");
    assertEquals(List.of("n/dir/a"), scanAll(store, "n/dir/", 10));
    assertTrue(store.delete("n/dir/a"));
    assertEquals(List.of(), scanAll(store, "n/dir/", 10));
    RadosIndexes.Fsck tombstone = fsck(true);
    assertEquals(1, tombstone.stalePending(), "a delete leaves its marker: " + tombstone);
    assertEquals(0, fsck(false).entries(), "removed past the grace period");
  }

  /**
   * A creator marks the entry, a delete of the same key marks it over and removes the
   * (missing) object, then the creator's object step makes the object and the creator dies
   * before settling: the name must stay visible (it would else be hidden for good, also
   * from the orphan sweeper's name scans, which would then delete the file's data).
   */
  @Test
  void aDeleteRacingACreateNeverHidesTheCreatedName() throws Exception {
    store.index().beforeCreate("n/dir/k"); // the creator's index step
    assertFalse(store.delete("n/dir/k")); // another client's whole delete
    Path f = Files.createTempFile("blobfs-index", ".bin");
    Files.writeString(f, "x");
    rados("-N", namespace + ".n", "put", "dir/k", f.toString()); // the creator's object step
    Files.delete(f);

    assertEquals(List.of("n/dir/k"), scanAll(store, "n/dir/", 10));
    RadosIndexes.Fsck f1 = fsck(true);
    assertTrue(f1.consistent(), f1.toString());
    assertEquals(List.of("n/dir/k"), scanAll(store, "n/dir/", 10));
  }

  /**
   * A delete marks the entry, a creator marks it over and finds the object there, then the
   * delete's object step removes it, and only then does the creator settle: it commits by
   * its own marker, still in place. The delete, settling last, must not leave that commit
   * standing, or the name shows with no object (the race CI once caught in
   * {@link #racingWritersOnTheSameKeysLeaveTheIndexRight}).
   */
  @Test
  void aDeleteWhoseMarkWasOverwrittenStillHidesTheNameItRemoved() throws Exception {
    store.put("n/dir/k", utf8("k"), PutMode.CREATE);
    String deleting = store.index().beforeDelete("n/dir/k"); // the deleter's index step
    String adding = store.index().beforeCreate("n/dir/k"); // an overwriter's index step
    rados("-N", namespace + ".n", "rm", "dir/k"); // the deleter's object step
    store.index().afterCreate("n/dir/k", adding, true); // the overwriter saw the object
    store.index().afterDelete("n/dir/k", deleting, true);

    assertFalse(store.stat("n/dir/k").exists());
    assertEquals(List.of(), scanAll(store, "n/dir/", 10));
    RadosIndexes.Fsck f = fsck(false);
    assertEquals(0, f.wrongEntries(), f.toString());
    assertTrue(f.consistent(), f.toString());
  }

  /**
   * fsck's listing of the objects can predate a delete: an adding entry of a name listed
   * then but gone now must not be committed (a committed entry is trusted without a stat).
   */
  @Test
  void fsckDoesNotCommitAnAddingEntryOnTheWordOfAStaleListing() throws Exception {
    store.put("n/dir/x", utf8("x"), PutMode.CREATE);
    Set<String> listing = store.withCluster(RadosIndexes::listNames);
    assertTrue(store.delete("n/dir/x"));
    store.index().beforeCreate("n/dir/x"); // a creator that then dies before its object step

    store.withCluster((cluster, pool, keys) ->
        RadosIndexes.fsck(listing, store.index(), Duration.ofMinutes(10), true));
    assertFalse(store.stat("n/dir/x").exists());
    assertEquals(List.of(), scanAll(store, "n/dir/", 10));
  }

  @Test
  void fsckFindsAndRepairsANameWithoutAnEntryAndAnEntryWithoutItsObject() throws Exception {
    store.put("n/dir/a", utf8("a"), PutMode.CREATE);
    Path f = Files.createTempFile("blobfs-index", ".bin");
    Files.writeString(f, "x");
    rados("-N", namespace + ".n", "put", "dir/hidden", f.toString()); // bypasses the index
    Files.delete(f);
    store.index().set("n/dir/phantom", RadosIndex.COMMITTED); // a wrong entry
    assertEquals(List.of("n/dir/a", "n/dir/phantom"), scanAll(store, "n/dir/", 10));

    RadosIndexes.Fsck found = fsck(false);
    assertEquals(1, found.missingEntries(), found.toString());
    assertEquals(1, found.wrongEntries(), found.toString());
    assertFalse(found.consistent());
    fsck(true);
    assertEquals(List.of("n/dir/a", "n/dir/hidden"), scanAll(store, "n/dir/", 10));
    RadosIndexes.Fsck after = fsck(false);
    assertTrue(after.consistent(), after.toString());
    assertEquals(2, after.entries());
  }

  @Test
  void scansPageAcrossShardsInKeyOrderOnlyUnderThePrefix() throws IOException {
    Set<String> expected = new TreeSet<>();
    for (int i = 0; i < 300; i++) {
      String k = "n/p/f" + i;
      store.put(k, utf8("x"), PutMode.CREATE);
      expected.add(k);
    }
    store.put("n/p2/other", utf8("x"), PutMode.CREATE);
    store.put("n/p", utf8("x"), PutMode.CREATE);
    store.put("d/abc/0", utf8("x"), PutMode.CREATE);
    for (int page : new int[] {1, 7, 1000}) {
      List<String> got = scanAll(store, "n/p/", page);
      assertEquals(new ArrayList<>(expected), got, "page size " + page);
    }
    assertEquals(List.of("n/p2/other"), scanAll(store, "n/p2/", 5));
    assertEquals(Set.of("d/abc/0"), Set.copyOf(scanAll(store, "d/", 5)), "data: by listing");
    for (int i = 0; i < 300; i += 2) {
      assertTrue(store.delete("n/p/f" + i));
    }
    assertEquals(150, scanAll(store, "n/p/", 13).size());
  }

  /**
   * Writers racing on the same few keys (creates, overwrites, deletes, conditional ones):
   * once they are done, every object has its entry, no committed entry lacks its object,
   * and a scan shows exactly the objects that exist.
   */
  @Test
  void racingWritersOnTheSameKeysLeaveTheIndexRight() throws Exception {
    List<String> keys = List.of("n/race/a", "n/race/b", "n/race/c", "n/race/d");
    long end = System.nanoTime() + Duration.ofSeconds(8).toNanos();
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    int[] ops = new int[1];
    for (int t = 0; t < 6; t++) {
      java.util.Random random = new java.util.Random(t);
      Thread th = new Thread(() -> {
        while (System.nanoTime() < end) {
          String k = keys.get(random.nextInt(keys.size()));
          try {
            switch (random.nextInt(5)) {
              case 0 -> store.put(k, utf8("o"), PutMode.OVERWRITE);
              case 1 -> store.put(k, utf8("c"), PutMode.CREATE);
              case 2 -> store.delete(k);
              case 3 -> {
                long v = store.stat(k).version();
                if (v != 0) { // 0: missing (a conditional call needs a version)
                  store.deleteIfVersion(k, v);
                }
              }
              default -> {
                long v = store.stat(k).version();
                if (v != 0) {
                  store.putIfVersion(k, utf8("v"), v);
                }
              }
            }
          } catch (io.blobfs.store.BlobAlreadyExistsException
              | io.blobfs.store.TransactionConflictException lost) {
            // a race lost, as the SPI says
          } catch (IOException | RuntimeException e) {
            failures.add(e);
          }
          synchronized (ops) {
            ops[0]++;
          }
        }
      });
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) {
      th.join();
    }
    assertEquals(List.of(), failures);
    Set<String> existing = new TreeSet<>();
    for (String k : keys) {
      if (store.stat(k).exists()) {
        existing.add(k);
      }
    }
    assertEquals(new ArrayList<>(existing), scanAll(store, "n/race/", 10), ops[0] + " ops");
    RadosIndexes.Fsck f = fsck(false);
    assertTrue(f.consistent(), f + " after " + ops[0] + " ops");
  }

  /**
   * A shard that says it has more but returns no entry (the OSD cuts an answer at zero
   * entries when asked for none, or at its byte limit) must not end a scan as if the index
   * had nothing more: the names after it would be hidden.
   */
  @Test
  void aShardWithMoreButNoEntriesDoesNotEndTheRead() throws IOException {
    store.put("n/m/a", utf8("a"), PutMode.CREATE);
    IOException e = assertThrows(IOException.class, () -> store.withCluster(
        (cluster, pool, keys) -> store.index().read("n/m/", null, 0)));
    assertTrue(e.getMessage().contains("more"), e.getMessage());
  }

  @Test
  void pendingEntriesBeforeTheFirstNameDoNotHideIt() throws IOException {
    for (int i = 0; i < 20; i++) {
      store.index().beforeCreate("n/d/a" + i);
    }
    store.put("n/d/z", utf8("z"), PutMode.CREATE);
    ScanPage p = store.scan("n/d/", null, 1);
    assertEquals(List.of("n/d/z"), p.keys());
  }

  @Test
  void aConditionalPutOrDeleteThatLosesLeavesTheNameAsItIs() throws IOException {
    store.put("n/v", utf8("a"), PutMode.CREATE);
    long v = store.stat("n/v").version();
    store.put("n/v", utf8("b"), PutMode.OVERWRITE);
    assertThrows(io.blobfs.store.TransactionConflictException.class,
        () -> store.deleteIfVersion("n/v", v));
    assertThrows(io.blobfs.store.TransactionConflictException.class,
        () -> store.putIfVersion("n/w", utf8("x"), 5));
    assertThrows(io.blobfs.store.BlobAlreadyExistsException.class,
        () -> store.put("n/v", utf8("c"), PutMode.CREATE));
    assertEquals(List.of("n/v"), scanAll(store, "n/", 10));
    RadosIndexes.Fsck f = fsck(true);
    assertTrue(f.consistent(), f.toString());
    assertEquals(List.of("n/v"), scanAll(store, "n/", 10));
  }

  /**
   * A build (another client's, which found no description when it looked) keeps the shard
   * count of the description that exists: rewriting it would scatter the clients' entries.
   */
  @Test
  void aBuildKeepsTheShardCountAndGraceOfAnExistingDescription() throws IOException {
    store.put("n/s/a", utf8("a"), PutMode.CREATE);
    int shards = store.index().shards();
    store.withCluster((cluster, pool, keys) -> RadosIndexes.build(cluster, pool, keys,
        new RadosIndex(cluster, pool, keys, shards + 3, Duration.ofHours(5))));
    RadosIndexes.Meta meta = store.withCluster(RadosIndexes::readMeta);
    assertEquals(shards, meta.shards());
    assertEquals(Duration.ofMinutes(10), meta.grace());
    assertTrue(meta.ready());
    try (RadosBlobStore other = open(Map.of())) {
      assertEquals(shards, other.index().shards());
      assertEquals(List.of("n/s/a"), scanAll(other, "n/s/", 10));
    }
  }

  @Test
  void aNewIndexRecordsItsGraceAndEveryClientUsesIt() throws IOException {
    store.close();
    namespace = "index-grace-" + System.nanoTime();
    store = open(Map.of("index-grace", "1h"));
    assertEquals(Duration.ofHours(1), store.withCluster(RadosIndexes::readMeta).grace());
    try (RadosBlobStore other = open(Map.of("index-grace", "20m"))) {
      assertEquals(Duration.ofHours(1), other.index().grace());
    }
    IllegalArgumentException tooShort = assertThrows(IllegalArgumentException.class,
        () -> open(Map.of("index-grace", "1m"))); // op-timeout 20s: at least 200s
    assertTrue(tooShort.getMessage().contains("index-grace"), tooShort.getMessage());
  }

  /**
   * A pool that has names but no index (written in scan mode, or by older clients that may
   * still be writing) is not indexed behind their backs at open: the build is a command.
   */
  @Test
  void aPoolWithNamesButNoIndexIsRefusedInIndexMode() throws Exception {
    store.close();
    namespace = "index-unbuilt-" + System.nanoTime();
    try (RadosBlobStore scan = open(Map.of("index", "scan"))) {
      scan.put("n/a", utf8("a"), PutMode.CREATE);
    }
    IOException refused = assertThrows(IOException.class, () -> open(Map.of()));
    assertTrue(refused.getMessage().contains("rados-index.sh build"), refused.getMessage());
    try (RadosBlobStore scan = open(Map.of("index", "scan"))) {
      assertNull(scan.withCluster(RadosIndexes::readMeta), "no index was made");
    }
    store = open(Map.of("index", "scan")); // for close()
  }

  @Test
  void aBuildCommitsOnlyTheNamesWhoseObjectsItFinds() throws Exception {
    // One batch of one shard, as the build makes it: a name whose object is there, a name
    // listed whose object is gone (a ghost), and one whose delete starts after the stat.
    RadosIndex index = store.index();
    String found = "n/b/found";
    int shard = index.shardOf(found);
    String ghost = inShard(index, shard, "n/b/ghost");
    String deleted = inShard(index, shard, "n/b/deleted");
    store.put(found, utf8("1"), PutMode.CREATE);
    store.put(deleted, utf8("2"), PutMode.CREATE);
    String[] deleting = new String[1];
    RadosIndexes.flushAdding(index, shard, new ArrayList<>(List.of(found, ghost, deleted)),
        () -> deleting[0] = index.beforeDelete(deleted));
    // The delete's mark made the batch's one write op fail; name by name, the found one is
    // committed, the ghost is left adding (not stat'ed as there), the deleted one deleting.
    assertTrue(entry(found).committed(), "found: " + entry(found).value());
    assertTrue(entry(ghost).adding(), "ghost: " + entry(ghost).value());
    assertEquals(deleting[0], entry(deleted).value());
  }

  /** {@code base} with a suffix that puts it in {@code shard}. */
  private static String inShard(RadosIndex index, int shard, String base) {
    for (int i = 0; ; i++) {
      if (index.shardOf(base + i) == shard) {
        return base + i;
      }
    }
  }

  private RadosIndex.Entry entry(String key) throws IOException {
    List<RadosIndex.Entry> e = store.index().read(key, null, 1).entries();
    assertEquals(key, e.get(0).key());
    return e.get(0);
  }

  @Test
  void aPoolWrittenInScanModeIsBuiltAndScanModeIsThenRefused() throws Exception {
    store.close();
    namespace = "index-scan-" + System.nanoTime();
    try (RadosBlobStore scan = open(Map.of("index", "scan"))) {
      assertNull(scan.index());
      scan.put("n/a/1", utf8("1"), PutMode.CREATE);
      scan.put("n/a/2", utf8("2"), PutMode.CREATE);
      scan.put("r/a", utf8("i"), PutMode.CREATE);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<String> args = new ArrayList<>(List.of("build", "--pool", env.pool(),
        "--namespace", namespace, "--conf", env.conf()));
    if (env.cephx()) {
      args.addAll(List.of("--client-id", "blobfs", "--keyring", env.clientKeyring()));
    }
    assertEquals(0, RadosIndexTool.run(args.toArray(String[]::new), new PrintStream(out),
        System.err));
    assertTrue(out.toString().contains("3 names"), out.toString());
    args.set(0, "fsck");
    out.reset();
    assertEquals(0, RadosIndexTool.run(args.toArray(String[]::new), new PrintStream(out),
        System.err), out.toString());

    store = open(Map.of());
    // Committed by the build: the first scan checks no object.
    assertTrue(store.index().read("", null, 10).entries().stream()
        .allMatch(RadosIndex.Entry::committed), store.index().read("", null, 10).toString());
    long checks = store.index().objectChecks();
    assertEquals(List.of("n/a/1", "n/a/2"), scanAll(store, "n/a/", 10));
    assertEquals(List.of("r/a"), scanAll(store, "r/", 10));
    assertEquals(checks, store.index().objectChecks());
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> open(Map.of("index", "scan")));
    assertTrue(refused.getMessage().contains("name index"), refused.getMessage());
  }

  /**
   * {@code scripts/rados-index.sh compact} compacts the OSDs of the index's shards (where
   * removed intent entries leave RocksDB tombstones that every read of the intents steps
   * over) and names each with its time; the index reads the same after it; a namespace
   * without an index is refused.
   */
  @Test
  void compactCompactsTheOsdsOfTheShardsAndRefusesANamespaceWithoutAnIndex()
      throws Exception {
    store.put("n/dir/kept", utf8("k"), PutMode.CREATE);
    store.put("r/dir\u0001op1", utf8("i"), PutMode.CREATE);
    assertTrue(store.delete("r/dir\u0001op1")); // used once: its entry is removed at once

    Result done = indexScript("compact", "--pool", env.pool(), "--namespace", namespace);
    assertEquals(0, done.rc(), done.out());
    List<String> lines = done.out().lines().filter(l -> l.startsWith("osd.")).toList();
    assertFalse(lines.isEmpty(), done.out());
    for (String line : lines) {
      assertTrue(line.matches("osd\\.\\d+ compacted in \\d+ ms"), line);
    }
    assertEquals(List.of("n/dir/kept"), scanAll(store, "n/", 10));
    assertEquals(List.of(), scanAll(store, "r/", 10));

    Result refused = indexScript("compact", "--pool", env.pool(), "--namespace",
        namespace + "-none");
    assertEquals(1, refused.rc(), refused.out());
    assertTrue(refused.out().contains("has no name index"), refused.out());
  }

  private record Result(int rc, String out) {}

  /** scripts/rados-index.sh with the ceph CLI's environment for this cluster. */
  private static Result indexScript(String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("timeout", "600", "bash",
        CephTestCluster.repoRoot().resolve("scripts/rados-index.sh").toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("CEPH_CONF", env.conf());
    if (env.cephx()) {
      pb.environment().put("CEPH_KEYRING", env.adminKeyring());
    }
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Result(p.waitFor(), out);
  }
}
