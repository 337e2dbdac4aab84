package io.blobfs.rados;

import com.sun.jna.Memory;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import io.blobfs.store.ScanPage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The life of a name index ({@link RadosIndex}) beside its entries: its description object
 * {@code meta}, which every client reads at open so that all agree on the shard count, and
 * the two commands that work on a live pool, {@link #build} and {@link #fsck}.
 *
 * <p>A description in state {@code building} tells clients to keep the index up to date on
 * every write but to scan by listing the pool, as the index may still miss names; the
 * build sets it {@code ready} once every object has its entry.
 */
final class RadosIndexes {
  private static final System.Logger LOG = System.getLogger(RadosIndexes.class.getName());
  private static final LibRados LIB = LibRados.INSTANCE;
  static final String META = "meta";
  private static final int META_MAX_BYTES = 4096;

  private RadosIndexes() {}

  /**
   * What {@code meta} says: shard count, whether scans may trust the index yet, and the
   * grace period after which a pending entry whose object is missing may be removed (one
   * value for every client and fsck, as a shorter one would remove a live writer's entry).
   */
  record Meta(int shards, boolean ready, Duration grace) {
    /** The grace period of a description written before it was recorded. */
    static final Duration DEFAULT_GRACE = Duration.ofMinutes(10);

    Meta ready(boolean now) {
      return new Meta(shards, now, grace);
    }

    String encode() {
      return "blobfs-index 1\nshards=" + shards + "\nstate=" + (ready ? "ready" : "building")
          + "\ngrace-ms=" + grace.toMillis() + "\n";
    }

    static Meta decode(String text) throws IOException {
      Map<String, String> kv = new TreeMap<>();
      String[] lines = text.split("\n");
      if (lines.length == 0 || !lines[0].equals("blobfs-index 1")) {
        throw new IOException("not a BlobFS index description (version 1): " + text);
      }
      for (String line : lines) {
        int eq = line.indexOf('=');
        if (eq > 0) {
          kv.put(line.substring(0, eq), line.substring(eq + 1));
        }
      }
      try {
        int shards = Integer.parseInt(kv.get("shards"));
        if (shards < 1) {
          throw new NumberFormatException("shards " + shards);
        }
        String graceMs = kv.get("grace-ms");
        Duration grace = graceMs == null ? DEFAULT_GRACE
            : Duration.ofMillis(Long.parseLong(graceMs));
        if (grace.isNegative()) {
          throw new NumberFormatException("grace-ms " + graceMs);
        }
        return new Meta(shards, "ready".equals(kv.get("state")), grace);
      } catch (RuntimeException e) {
        throw new IOException("bad BlobFS index description: " + text, e);
      }
    }
  }

  /** The index's description, or null if the pool (namespace) has no index. */
  static Meta readMeta(RadosCluster cluster, String pool, RadosKeys keys) throws IOException {
    Memory buf = new Memory(META_MAX_BYTES);
    int rc = LIB.rados_read(cluster.context(pool, keys.indexNamespace()),
        RadosIndex.cString(META), buf, new NativeLong(META_MAX_BYTES), 0);
    if (rc == -RadosErrors.ENOENT) {
      return null;
    }
    RadosErrors.check("read index description", META, rc);
    return Meta.decode(new String(buf.getByteArray(0, rc), StandardCharsets.UTF_8));
  }

  /**
   * Writes the description; with {@code exclusive}, false if one exists already. Only an
   * exclusive write makes one: every other write rewrites the state of one read before, with
   * the shard count and grace it read, so no client ever changes another's shard count.
   */
  private static boolean writeMeta(RadosCluster cluster, String pool, RadosKeys keys, Meta meta,
      boolean exclusive) throws IOException {
    byte[] b = meta.encode().getBytes(StandardCharsets.UTF_8);
    Memory buf = new Memory(b.length);
    buf.write(0, b, 0, b.length);
    Pointer op = LIB.rados_create_write_op();
    try {
      if (exclusive) {
        LIB.rados_write_op_create(op, LibRados.LIBRADOS_CREATE_EXCLUSIVE, null);
      }
      LIB.rados_write_op_write_full(op, buf, new NativeLong(b.length));
      int rc = LIB.rados_write_op_operate(op, cluster.context(pool, keys.indexNamespace()),
          RadosIndex.cString(META), null, 0);
      if (exclusive && rc == -RadosErrors.EEXIST) {
        return false;
      }
      RadosErrors.check("write index description", META, rc);
      return true;
    } finally {
      LIB.rados_release_write_op(op);
    }
  }

  /**
   * Opens the index of a pool (namespace) for a store in index mode. A pool without names
   * gets one at once: its description is written (exclusively, in state building, so that
   * every client from then on keeps it), the few names made meanwhile are entered, and it
   * is declared ready. A pool that already has names is refused: clients of an older
   * version or in scan mode may be writing to it without keeping an index, so its index is
   * built by {@code scripts/rados-index.sh build} once they are stopped.
   */
  static Opened open(RadosCluster cluster, String pool, RadosKeys keys, int shards,
      Duration grace) throws IOException {
    Meta meta = readMeta(cluster, pool, keys);
    if (meta == null) {
      if (hasNames(cluster, pool, keys)) {
        throw new IOException("pool " + pool + (keys.base().isEmpty() ? ""
            : " namespace " + keys.base()) + " has names but no name index: stop its clients"
            + " in scan mode (index=scan) or of older versions, then run"
            + " scripts/rados-index.sh build (or open it with index=scan)");
      }
      Meta fresh = new Meta(shards, false, grace);
      if (writeMeta(cluster, pool, keys, fresh, true)) {
        build(cluster, pool, keys, new RadosIndex(cluster, pool, keys, shards, grace));
        return new Opened(new RadosIndex(cluster, pool, keys, shards, grace), true);
      }
      meta = readMeta(cluster, pool, keys); // another client made it meanwhile
    }
    if (!meta.ready()) {
      LOG.log(System.Logger.Level.WARNING, "the name index of pool " + pool
          + (keys.base().isEmpty() ? "" : " namespace " + keys.base()) + " is still being"
          + " built: scans list the whole pool until scripts/rados-index.sh build finishes;"
          + " if no build is running (one was cut off), run it again");
    }
    return new Opened(new RadosIndex(cluster, pool, keys, meta.shards(), meta.grace()),
        meta.ready());
  }

  /** Whether the pool (namespace) has any object of the indexed segments. */
  private static boolean hasNames(RadosCluster cluster, String pool, RadosKeys keys)
      throws IOException {
    RadosListings listings = new RadosListings(cluster, pool, keys);
    try {
      for (String segment : RadosIndex.SEGMENTS) {
        if (!listings.page(segment + "/", null, 1).keys().isEmpty()) {
          return true;
        }
      }
      return false;
    } finally {
      listings.closeAll();
    }
  }

  /** An index and whether scans may use it already. */
  record Opened(RadosIndex index, boolean ready) {}

  /**
   * Enters every existing name of the indexed segments, then declares the index ready.
   * Each batch is entered as adding marks, then the names whose object a stat finds are
   * committed at once ({@link #flushAdding}), so that the first reader of a name does not
   * pay that stat; a name deleted since the listing stays adding, which readers check. Safe on a live pool whose
   * clients all run this version: they see the description (building) and keep the index
   * themselves; an entry made here for an object deleted meanwhile is only a pending one.
   * {@code requested} gives the shard count and grace of a new description only: one that
   * exists (another client's) is kept as it is, and the index built is the one it describes.
   * Returns the number of names entered.
   */
  static long build(RadosCluster cluster, String pool, RadosKeys keys, RadosIndex requested)
      throws IOException {
    writeMeta(cluster, pool, keys,
        new Meta(requested.shards(), false, requested.grace()), true);
    Meta meta = readMeta(cluster, pool, keys);
    if (meta == null) {
      throw new IOException("index description of pool " + pool + " vanished during build");
    }
    RadosIndex index = new RadosIndex(cluster, pool, keys, meta.shards(), meta.grace());
    createShards(cluster, pool, keys, index.shards());
    long n = 0;
    List<List<String>> perShard = new ArrayList<>();
    for (int s = 0; s < index.shards(); s++) {
      perShard.add(new ArrayList<>());
    }
    for (String key : listNames(cluster, pool, keys)) {
      int shard = index.shardOf(key);
      List<String> batch = perShard.get(shard);
      batch.add(key);
      if (batch.size() == 500) {
        flushAdding(index, shard, batch);
      }
      n++;
    }
    for (int s = 0; s < perShard.size(); s++) {
      flushAdding(index, s, perShard.get(s));
    }
    if (!meta.ready()) {
      writeMeta(cluster, pool, keys, meta.ready(true), false);
    }
    return n;
  }

  /**
   * Enters a batch of one shard's names as adding marks, stats their objects (all in
   * flight at once), and commits those found, in one write op asserting that each mark is
   * still the one set: a committed entry is trusted without a stat, so it is made only on
   * a stat's word (the listing may predate a delete), and a delete after the stat marks
   * its entry first, so the commit then fails and leaves the entries adding. Committing
   * costs one stat per name here instead of one in the first read of each name.
   */
  private static void flushAdding(RadosIndex index, int shard, List<String> batch)
      throws IOException {
    flushAdding(index, shard, batch, () -> { });
  }

  /** Something run between a batch's stats and its commit: a delete racing the build. */
  interface BeforeCommit {
    void run() throws IOException;
  }

  /** {@link #flushAdding(RadosIndex, int, List)}, running {@code beforeCommit} (tests). */
  static void flushAdding(RadosIndex index, int shard, List<String> batch,
      BeforeCommit beforeCommit) throws IOException {
    if (batch.isEmpty()) {
      return;
    }
    List<String> values = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      values.add(RadosIndex.marker('A'));
    }
    index.setAll(shard, batch, values);
    boolean[] exists = index.exist(batch);
    List<String> found = new ArrayList<>(batch.size());
    List<String> marks = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      if (exists[i]) {
        found.add(batch.get(i));
        marks.add(values.get(i));
      }
    }
    beforeCommit.run();
    index.commitAll(shard, found, marks);
    batch.clear();
  }

  /** Shard objects exist from the start, so no read of an index finds one missing. */
  private static void createShards(RadosCluster cluster, String pool, RadosKeys keys,
      int shards) throws IOException {
    for (int s = 0; s < shards; s++) {
      Pointer op = LIB.rados_create_write_op();
      try {
        LIB.rados_write_op_create(op, 0, null); // not exclusive: an existing shard stays
        RadosErrors.check("create index shard", "shard." + s, LIB.rados_write_op_operate(op,
            cluster.context(pool, keys.indexNamespace()), RadosIndex.shardOid(s), null, 0));
      } finally {
        LIB.rados_release_write_op(op);
      }
    }
  }

  /** Every key of the indexed segments, from a listing of their RADOS namespaces. */
  static Set<String> listNames(RadosCluster cluster, String pool, RadosKeys keys)
      throws IOException {
    Set<String> out = new HashSet<>();
    RadosListings listings = new RadosListings(cluster, pool, keys);
    try {
      for (String segment : RadosIndex.SEGMENTS) {
        String cursor = null;
        do {
          ScanPage p = listings.page(segment + "/", cursor, 1000);
          out.addAll(p.keys());
          cursor = p.nextCursor();
        } while (cursor != null);
      }
    } finally {
      listings.closeAll();
    }
    return out;
  }

  /** What {@link #fsck} found, and repaired when asked. */
  record Fsck(long objects, long entries, long missingEntries, long wrongEntries,
      long stalePending, long committedNow, long pendingInFlight) {
    boolean consistent() {
      return missingEntries == 0 && wrongEntries == 0;
    }

    @Override
    public String toString() {
      return "objects=" + objects + " entries=" + entries + " missing-entries=" + missingEntries
          + " wrong-entries=" + wrongEntries + " stale-pending=" + stalePending
          + " committed-now=" + committedNow + " pending-in-flight=" + pendingInFlight;
    }
  }

  /**
   * Checks the index against the objects: a name without an entry (hidden from scans) and a
   * committed entry without its object (a name shown that is not there) are errors; pending
   * entries whose object is missing past the grace period are stale; pending entries whose
   * object exists are committed. Every finding is checked again against the object before
   * it counts, so writes running meanwhile are not reported. With {@code repair}, errors
   * and stale entries are fixed with conditional updates, safe beside live clients: a
   * hidden name gets an adding entry, a wrong or stale entry is removed only if unchanged.
   */
  static Fsck fsck(RadosCluster cluster, String pool, RadosKeys keys, RadosIndex index,
      Duration grace, boolean repair) throws IOException {
    return fsck(listNames(cluster, pool, keys), index, grace, repair);
  }

  /**
   * {@link #fsck} against a listing of the objects taken before: writes running since may
   * have made it stale, so nothing is changed on its word alone, only on a stat's.
   */
  static Fsck fsck(Set<String> objects, RadosIndex index, Duration grace, boolean repair)
      throws IOException {
    long entries = 0;
    long wrong = 0;
    long stale = 0;
    long committed = 0;
    long inFlight = 0;
    Set<String> entered = new HashSet<>();
    String after = null;
    long now = System.currentTimeMillis();
    while (true) {
      RadosIndex.Batch b = index.read("", after, RadosIndex.MAX_PER_READ);
      List<RadosIndex.Entry> absent = new ArrayList<>();
      List<RadosIndex.Entry> adding = new ArrayList<>();
      for (RadosIndex.Entry e : b.entries()) {
        entries++;
        entered.add(e.key());
        if (!objects.contains(e.key())) {
          absent.add(e);
        } else if (repair && (e.adding() || !e.committed() && now - e.markedMillis()
            >= grace.toMillis())) {
          adding.add(e);
        }
      }
      // A committed entry is trusted without a stat, so it is made only on a stat's word
      // (the listing may predate a delete); a delete that comes after the stat marks the
      // entry first, so the conditional commit then fails. A deleting mark older than the
      // grace whose object exists is a delete long over (its op timed out) that lost a race
      // or died before its object step: readers never commit it (the delete may still
      // come), so without this it would cost every scan a stat for good.
      boolean[] present = index.exist(adding.stream().map(RadosIndex.Entry::key).toList());
      for (int i = 0; i < adding.size(); i++) {
        RadosIndex.Entry e = adding.get(i);
        if (present[i] && index.replaceIf(e.key(), e.value(), RadosIndex.COMMITTED)) {
          committed++;
        }
      }
      boolean[] exists = index.exist(absent.stream().map(RadosIndex.Entry::key).toList());
      for (int i = 0; i < absent.size(); i++) {
        RadosIndex.Entry e = absent.get(i);
        if (exists[i]) {
          continue; // made after the listing
        }
        if (e.committed()) {
          wrong++;
          if (repair) {
            index.removeIf(e.key(), e.value());
          }
        } else if (now - e.markedMillis() >= grace.toMillis()) {
          stale++;
          if (repair) {
            index.removeIf(e.key(), e.value());
          }
        } else {
          inFlight++;
        }
      }
      if (b.end()) {
        break;
      }
      after = b.entries().get(b.entries().size() - 1).key();
    }
    List<String> unentered = new ArrayList<>();
    for (String key : objects) {
      if (!entered.contains(key)) {
        unentered.add(key);
      }
    }
    boolean[] stillThere = index.exist(unentered);
    long missing = 0;
    for (int i = 0; i < unentered.size(); i++) {
      String key = unentered.get(i);
      if (!stillThere[i] || hasEntry(index, key)) {
        continue; // deleted, or entered, since the listing
      }
      missing++;
      if (repair) {
        index.set(key, RadosIndex.marker('A')); // always safe: readers check the object
      }
    }
    return new Fsck(objects.size(), entries, missing, wrong, stale, committed, inFlight);
  }

  private static boolean hasEntry(RadosIndex index, String key) throws IOException {
    List<RadosIndex.Entry> e = index.read(key, null, 1).entries();
    return !e.isEmpty() && e.get(0).key().equals(key);
  }
}
