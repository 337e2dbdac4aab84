package io.blobfs.rados;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.NativeLongByReference;
import com.sun.jna.ptr.PointerByReference;
import io.blobfs.store.ScanPage;
import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32;

/**
 * The name index of a store: the keys the namespace scans (records {@code n/...} and
 * intents {@code r/...}, never data stripes) kept as omap entries of a few shard objects,
 * so that a scan asks every shard, in parallel, for the entries after a cursor that start
 * with a prefix, and the OSDs filter them on their side: its cost is the entries it
 * returns and the shard count, not the pool. RADOS itself lists only in hash order over
 * the whole pool.
 *
 * <p>Layout: RADOS namespace {@link RadosKeys#indexNamespace()}, objects {@code meta} (shard
 * count and state, {@link IndexMeta}) and {@code shard.0 .. shard.N-1}; a key lives in
 * shard {@code crc32(key) mod N}. An entry's value says what is known of the object:
 * <ul>
 *   <li>{@code C}: committed, the object existed when the entry was set so;
 *   <li>{@code A<millis>.<nonce>}: adding, the object may or may not exist yet;
 *   <li>{@code D<millis>.<nonce>}: deleting, the object may or may not exist still.
 * </ul>
 * A writer sets its own marker before the object step and settles it after
 * ({@link #beforeCreate}, {@link #afterCreate}, {@link #beforeDelete}, {@link #afterDelete}),
 * always conditionally on its marker being still there (omap_cmp in the same write op);
 * if it is not, someone else touched the entry and the writer sets a fresh adding marker,
 * which is always safe. A delete that removed its object leaves its deleting marker as a
 * tombstone: no writer ever removes an entry (but for keys used once, below). So every
 * existing object has an entry, and an
 * entry that is not committed is checked against its object by whoever reads it: a crash
 * between the steps never hides a name and never shows a missing one. Readers upgrade an
 * adding entry whose object exists to committed, never a deleting one (the delete may still
 * come), and remove an entry whose object is missing once its marker is older than the
 * grace period, which far exceeds any writer's object step (op timeout).
 *
 * <p>Keys used once ({@link #usedOnce}: the namespace's intents without transactions,
 * {@code r/DIR\u0001ID}) are created by one exclusive put and never again once deleted, so
 * no creator can race their delete: a delete that removed such an object removes its
 * entry at once (conditionally on its own marker). Without that, every finished rename
 * left a tombstone for the grace period, and each later directory rename, which reads
 * every intent, checked every one of them against its object: 1,515 of them after one
 * Spark job.
 */
final class RadosIndex {
  private static final System.Logger LOG = System.getLogger(RadosIndex.class.getName());
  private static final LibRados LIB = LibRados.INSTANCE;
  /** The key segments indexed: the namespace scans only names and rename intents. */
  static final Set<String> SEGMENTS = Set.of("n", "r");
  static final String COMMITTED = "C";
  /**
   * Entries asked of one shard per read: below the OSD's osd_max_omap_entries_per_request
   * (1024 by default), which would otherwise cut the answer short.
   */
  static final int MAX_PER_READ = 1000;
  private static final SecureRandom NONCES = new SecureRandom();

  private final RadosCluster cluster;
  private final String pool;
  private final RadosKeys keys;
  private final int shards;
  private final Duration grace;
  /** Objects stat'ed to check pending entries: what tombstones cost readers (tests). */
  private final LongAdder objectChecks = new LongAdder();

  RadosIndex(RadosCluster cluster, String pool, RadosKeys keys, int shards, Duration grace) {
    this.cluster = cluster;
    this.pool = pool;
    this.keys = keys;
    this.shards = shards;
    this.grace = grace;
  }

  int shards() {
    return shards;
  }

  Duration grace() {
    return grace;
  }

  long objectChecks() {
    return objectChecks.sum();
  }

  /**
   * Whether a key is created once and never again after its delete: an intent key of its
   * own operation ({@code io.blobfs.namespace.KeyLayout#leasedIntentKey}).
   */
  static boolean usedOnce(String key) {
    return key.startsWith("r/") && key.indexOf('\u0001') > 0;
  }

  /** Whether a key has an entry in the index (names and intents). */
  static boolean covers(String key) {
    int slash = key.indexOf('/');
    return slash > 0 && SEGMENTS.contains(key.substring(0, slash));
  }

  /** Whether every key a scan of {@code prefix} may return is covered by the index. */
  static boolean servesPrefix(String prefix) {
    return covers(prefix);
  }

  int shardOf(String key) {
    CRC32 crc = new CRC32();
    crc.update(key.getBytes(StandardCharsets.UTF_8));
    return (int) (crc.getValue() % shards);
  }

  static byte[] shardOid(int shard) {
    return cString("shard." + shard);
  }

  private Pointer io() throws IOException {
    return cluster.context(pool, keys.indexNamespace());
  }

  // ---------------------------------------------------------------- writers' protocol

  /** A fresh marker of state {@code A} or {@code D}: unique, so omap_cmp tells it apart. */
  static String marker(char state) {
    return state + Long.toString(System.currentTimeMillis()) + "."
        + Long.toHexString(NONCES.nextLong());
  }

  /** When a marker was set (writer's clock); 0 for a committed entry or a bad value. */
  static long millisOf(String value) {
    int dot = value.indexOf('.');
    try {
      return dot > 1 ? Long.parseLong(value.substring(1, dot)) : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** Before an object step that may create the key's object; null if not indexed. */
  String beforeCreate(String key) throws IOException {
    if (!covers(key)) {
      return null;
    }
    String m = marker('A');
    set(key, m);
    return m;
  }

  /** Before an object step that may remove the key's object; null if not indexed. */
  String beforeDelete(String key) throws IOException {
    if (!covers(key)) {
      return null;
    }
    String m = marker('D');
    set(key, m);
    return m;
  }

  /**
   * Before the object step, a writer whose marker is older than half the grace period (a
   * pause since it was set) sets a fresh one: a reader removes a missing object's entry
   * only once its marker is older than the grace period, and the object step itself takes
   * at most the op timeout, which the grace period far exceeds.
   */
  String refresh(String key, String marker) throws IOException {
    long age = marker == null ? 0 : System.currentTimeMillis() - millisOf(marker);
    if (age < grace.toMillis() / 2) {
      return marker;
    }
    String m = marker(marker.charAt(0));
    set(key, m);
    return m;
  }

  /**
   * After the object step of {@link #beforeCreate}: {@code exists} when the object is known
   * to exist now (the step succeeded, or the object was already there). Otherwise the
   * adding marker stays, and readers check the object. Throws if the entry could not be
   * settled: another writer changed it meanwhile and no fresh adding marker could be set,
   * so the name may have no entry that shows it.
   */
  void afterCreate(String key, String marker, boolean exists) throws IOException {
    if (marker == null || !exists) {
      return;
    }
    if (!replaceIf(key, marker, COMMITTED)) {
      set(key, marker('A')); // someone changed the entry: readers check the object
    }
  }

  /**
   * After the object step of {@link #beforeDelete}: {@code gone} when the object is known to
   * be absent now. A delete never removes the entry itself: its deleting marker stays as a
   * tombstone that readers check against the object and remove once it is older than the
   * grace period. Removing it here would race a creator that marked the entry before this
   * delete's marker and creates the object after its removal: that name would have no
   * entry, hidden from scans (and from the orphan sweeper's name scans). Else (a
   * conditional delete that lost, an unknown outcome) the marker becomes an adding one,
   * which readers check and may commit; a failure there leaves the deleting marker, which
   * readers check too, so it is logged, not thrown.
   *
   * <p>A delete whose marker is no longer there sets a fresh deleting one. Its object step
   * may have run after that of a writer who marked the entry later: a creator (or a reader
   * that saw the object) then commits the entry by its own marker, still in place, and the
   * name would show with no object behind it. Only a deleting marker set after the removal
   * rules that out; a commit after it needs a marker set after it too, so an object step
   * after the removal. That one a failure must not skip, so it is thrown.
   */
  void afterDelete(String key, String marker, boolean gone) throws IOException {
    if (marker == null) {
      return;
    }
    if (gone) {
      // A key used once has no creator that could race this delete: nothing to keep.
      if (!(usedOnce(key) ? removeIf(key, marker) : replaceIf(key, marker, marker))) {
        set(key, marker('D'));
      }
      return;
    }
    try {
      if (!replaceIf(key, marker, marker('A'))) {
        set(key, marker('A'));
      }
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "index entry of " + key
          + " left deleting (readers check its object): " + e);
    }
  }

  // ---------------------------------------------------------------- single-entry writes

  /** Sets an entry unconditionally. */
  void set(String key, String value) throws IOException {
    setAll(shardOf(key), List.of(key), List.of(value));
  }

  /** Sets entries of one shard in one write op. */
  void setAll(int shard, List<String> keys, List<String> values) throws IOException {
    CStrings k = new CStrings(keys, true);
    CStrings v = new CStrings(values, false);
    Pointer op = LIB.rados_create_write_op();
    long t0 = System.nanoTime();
    try {
      LIB.rados_write_op_omap_set(op, k.pointers, v.pointers, v.lengths,
          new NativeLong(keys.size()));
      RadosErrors.check("index set", keys.get(0), operate(op, shard));
      RadosCallTimes.record("index.set", t0);
    } finally {
      LIB.rados_release_write_op(op);
      Reference.reachabilityFence(k);
      Reference.reachabilityFence(v);
    }
  }

  /**
   * Commits entries of one shard in one write op that asserts each is still the marker
   * {@code expected} gives it (the OSD applies all or none); if one changed meanwhile,
   * each is committed on its own, conditionally. Returns how many were committed.
   */
  long commitAll(int shard, List<String> keys, List<String> expected) throws IOException {
    if (keys.isEmpty()) {
      return 0;
    }
    CStrings k = new CStrings(keys, true);
    CStrings v = new CStrings(java.util.Collections.nCopies(keys.size(), COMMITTED), false);
    List<Memory> wants = new ArrayList<>(keys.size());
    List<IntByReference> results = new ArrayList<>(keys.size());
    Pointer op = LIB.rados_create_write_op();
    int rc;
    try {
      for (int i = 0; i < keys.size(); i++) {
        byte[] want = expected.get(i).getBytes(StandardCharsets.UTF_8);
        Memory buf = new Memory(Math.max(1, want.length));
        buf.write(0, want, 0, want.length);
        IntByReference result = new IntByReference();
        wants.add(buf);
        results.add(result);
        LIB.rados_write_op_omap_cmp(op, cString(keys.get(i)), LibRados.LIBRADOS_CMPXATTR_OP_EQ,
            buf, new NativeLong(want.length), result);
      }
      LIB.rados_write_op_omap_set(op, k.pointers, v.pointers, v.lengths,
          new NativeLong(keys.size()));
      rc = operate(op, shard);
    } finally {
      LIB.rados_release_write_op(op);
      Reference.reachabilityFence(k);
      Reference.reachabilityFence(v);
      Reference.reachabilityFence(wants);
      Reference.reachabilityFence(results);
    }
    if (rc != -RadosErrors.ECANCELED && rc != -RadosErrors.ENOENT) {
      RadosErrors.check("index commit", keys.get(0), rc);
      return keys.size();
    }
    long committed = 0;
    for (int i = 0; i < keys.size(); i++) {
      if (replaceIf(keys.get(i), expected.get(i), COMMITTED)) {
        committed++;
      }
    }
    return committed;
  }

  /** Replaces an entry only if its value is {@code expected}; false if it was not. */
  boolean replaceIf(String key, String expected, String value) throws IOException {
    return conditional(key, expected, value);
  }

  /** Removes an entry only if its value is {@code expected}; false if it was not. */
  boolean removeIf(String key, String expected) throws IOException {
    return conditional(key, expected, null);
  }

  private boolean conditional(String key, String expected, String value) throws IOException {
    byte[] want = expected.getBytes(StandardCharsets.UTF_8);
    Memory wantBuf = new Memory(Math.max(1, want.length));
    wantBuf.write(0, want, 0, want.length);
    IntByReference cmpResult = new IntByReference();
    CStrings k = new CStrings(List.of(key), true);
    CStrings v = value == null ? null : new CStrings(List.of(value), false);
    Pointer op = LIB.rados_create_write_op();
    try {
      // The assertion and the change are one write op: the OSD applies both or neither.
      LIB.rados_write_op_omap_cmp(op, cString(key), LibRados.LIBRADOS_CMPXATTR_OP_EQ,
          wantBuf, new NativeLong(want.length), cmpResult);
      if (v == null) {
        LIB.rados_write_op_omap_rm_keys(op, k.pointers, new NativeLong(1));
      } else {
        LIB.rados_write_op_omap_set(op, k.pointers, v.pointers, v.lengths, new NativeLong(1));
      }
      long t0 = System.nanoTime();
      int rc = operate(op, shardOf(key));
      RadosCallTimes.record(v == null ? "index.removeIf" : "index.replaceIf", t0);
      if (rc == -RadosErrors.ECANCELED || rc == -RadosErrors.ENOENT) {
        return false; // the entry changed, or is gone (a missing key fails the comparison)
      }
      RadosErrors.check("index update", key, rc);
      return true;
    } finally {
      LIB.rados_release_write_op(op);
      Reference.reachabilityFence(wantBuf);
      Reference.reachabilityFence(cmpResult);
      Reference.reachabilityFence(k);
      Reference.reachabilityFence(v);
    }
  }

  private int operate(Pointer op, int shard) throws IOException {
    // FULL_TRY: a delete's settlement frees space and must go through on a full pool.
    return LIB.rados_write_op_operate(op, io(), shardOid(shard), null,
        LibRados.LIBRADOS_OPERATION_FULL_TRY);
  }

  // ---------------------------------------------------------------- reads

  /** One omap entry: its key as UTF-8 (the OSD's order) and its value. */
  record Entry(String key, byte[] raw, String value) {
    static final Comparator<Entry> ORDER = (a, b) -> Arrays.compareUnsigned(a.raw, b.raw);

    boolean committed() {
      return COMMITTED.equals(value);
    }

    boolean adding() {
      return value.startsWith("A");
    }

    /** When a marker was set (writer's clock); 0 for a committed entry or a bad value. */
    long markedMillis() {
      return millisOf(value);
    }
  }

  /** Entries of a merged read, in key order, and whether the index has more after them. */
  record Batch(List<Entry> entries, boolean end) {}

  /**
   * One page of the keys under {@code prefix} after {@code cursor} (a key: the cursor of an
   * index scan is the last key returned, so it holds no state): committed entries as they
   * are, the others only if their object exists. Pages are never empty unless last, so a
   * probe for one key needs one call.
   */
  ScanPage scan(String prefix, String cursor, int limit) throws IOException {
    List<String> out = new ArrayList<>(Math.min(limit, MAX_PER_READ));
    String after = cursor;
    while (true) {
      Batch b = read(prefix, after, Math.min(limit - out.size(), MAX_PER_READ));
      for (Entry e : visible(b.entries())) {
        out.add(e.key());
      }
      if (b.end()) {
        return new ScanPage(out, null);
      }
      after = b.entries().get(b.entries().size() - 1).key();
      if (out.size() >= limit) {
        return new ScanPage(out, after);
      }
    }
  }

  /**
   * Up to {@code max} entries under {@code prefix} after {@code after} from every shard,
   * asked in parallel and merged: only entries up to the smallest last key of the shards
   * that have more are certain to be the next ones in order.
   */
  Batch read(String prefix, String after, int max) throws IOException {
    List<ShardRead> reads = new ArrayList<>(shards);
    long t0 = System.nanoTime();
    try {
      for (int s = 0; s < shards; s++) {
        reads.add(new ShardRead(s, prefix, after, max));
      }
      for (ShardRead r : reads) {
        r.submit(io());
      }
      List<Entry> all = new ArrayList<>();
      byte[] horizon = null;
      for (ShardRead r : reads) {
        r.collect();
        all.addAll(r.entries);
        if (r.more && !r.entries.isEmpty()) {
          byte[] last = r.entries.get(r.entries.size() - 1).raw();
          horizon = horizon == null || Arrays.compareUnsigned(last, horizon) < 0 ? last : horizon;
        }
      }
      all.sort(Entry.ORDER);
      List<Entry> taken = new ArrayList<>(Math.min(all.size(), max));
      for (Entry e : all) {
        if (taken.size() == max || horizon != null && Arrays.compareUnsigned(e.raw(), horizon) > 0) {
          break;
        }
        taken.add(e);
      }
      return new Batch(taken, horizon == null && taken.size() == all.size());
    } finally {
      for (ShardRead r : reads) {
        r.release();
      }
      RadosCallTimes.record("index.read", t0);
    }
  }

  /**
   * The entries whose names are visible: committed ones, and pending ones whose object
   * exists (checked in parallel). An adding entry found with its object becomes committed;
   * a pending entry without its object past the grace period is removed (conditionally).
   */
  List<Entry> visible(List<Entry> entries) throws IOException {
    List<Entry> pending = new ArrayList<>();
    for (Entry e : entries) {
      if (!e.committed()) {
        pending.add(e);
      }
    }
    if (pending.isEmpty()) {
      return entries;
    }
    boolean[] exists = exist(pending.stream().map(Entry::key).toList());
    List<Entry> dropped = new ArrayList<>();
    long now = System.currentTimeMillis();
    for (int i = 0; i < pending.size(); i++) {
      Entry e = pending.get(i);
      if (exists[i]) {
        if (e.adding()) {
          replaceIf(e.key(), e.value(), COMMITTED);
        }
      } else {
        dropped.add(e);
        if (now - e.markedMillis() >= grace.toMillis()) {
          removeIf(e.key(), e.value());
        }
      }
    }
    List<Entry> out = new ArrayList<>(entries);
    out.removeAll(dropped);
    return out;
  }

  /** Whether each key's object exists: one AIO stat each, all in flight together. */
  boolean[] exist(List<String> storeKeys) throws IOException {
    int n = storeKeys.size();
    objectChecks.add(n);
    long t0 = System.nanoTime();
    Pointer[] completions = new Pointer[n];
    LongByReference[] sizes = new LongByReference[n];
    LongByReference[] times = new LongByReference[n];
    boolean[] out = new boolean[n];
    try {
      for (int i = 0; i < n; i++) {
        RadosKeys.Location loc = keys.locate(storeKeys.get(i));
        completions[i] = completion();
        sizes[i] = new LongByReference();
        times[i] = new LongByReference();
        int rc = LIB.rados_aio_stat(cluster.context(pool, loc.namespace()), loc.oid(),
            completions[i], sizes[i], times[i]);
        if (rc < 0) {
          LIB.rados_aio_release(completions[i]);
          completions[i] = null;
          throw RadosErrors.toException("index check", storeKeys.get(i), rc);
        }
      }
      for (int i = 0; i < n; i++) {
        LIB.rados_aio_wait_for_complete(completions[i]);
        int rc = LIB.rados_aio_get_return_value(completions[i]);
        if (rc != -RadosErrors.ENOENT) {
          RadosErrors.check("index check", storeKeys.get(i), rc);
          out[i] = true;
        }
      }
      return out;
    } finally {
      for (Pointer c : completions) {
        if (c != null) {
          LIB.rados_aio_wait_for_complete(c); // librados writes into sizes/times until done
          LIB.rados_aio_release(c);
        }
      }
      Reference.reachabilityFence(sizes);
      Reference.reachabilityFence(times);
      RadosCallTimes.record("index.exist", t0, n);
    }
  }

  private static Pointer completion() throws IOException {
    PointerByReference c = new PointerByReference();
    RadosErrors.check("aio completion", "", LIB.rados_aio_create_completion2(null, null, c));
    return c.getValue();
  }

  /** An omap read of one shard in flight; its native state is kept until released. */
  private final class ShardRead {
    final int shard;
    final Pointer op = LIB.rados_create_read_op();
    final PointerByReference iter = new PointerByReference();
    final ByteByReference moreFlag = new ByteByReference();
    final IntByReference prval = new IntByReference();
    Pointer completion;
    final List<Entry> entries = new ArrayList<>();
    final int max;
    boolean more;

    ShardRead(int shard, String prefix, String after, int max) {
      this.shard = shard;
      this.max = max;
      LIB.rados_read_op_omap_get_vals2(op, after == null ? null : cString(after),
          cString(prefix), max, iter, moreFlag, prval);
    }

    void submit(Pointer io) throws IOException {
      completion = completion();
      int rc = LIB.rados_aio_read_op_operate(op, io, completion, shardOid(shard), 0);
      if (rc < 0) {
        LIB.rados_aio_release(completion);
        completion = null;
        throw RadosErrors.toException("index read", "shard." + shard, rc);
      }
    }

    void collect() throws IOException {
      LIB.rados_aio_wait_for_complete(completion);
      int rc = LIB.rados_aio_get_return_value(completion);
      if (rc == -RadosErrors.ENOENT) {
        return; // a shard not made yet holds nothing
      }
      RadosErrors.check("index read", "shard." + shard, rc);
      RadosErrors.check("index read", "shard." + shard, prval.getValue());
      PointerByReference k = new PointerByReference();
      PointerByReference v = new PointerByReference();
      NativeLongByReference kl = new NativeLongByReference();
      NativeLongByReference vl = new NativeLongByReference();
      while (true) {
        RadosErrors.check("index read", "shard." + shard,
            LIB.rados_omap_get_next2(iter.getValue(), k, v, kl, vl));
        if (k.getValue() == null) {
          break;
        }
        byte[] raw = k.getValue().getByteArray(0, kl.getValue().intValue());
        int vn = vl.getValue().intValue();
        byte[] val = vn == 0 ? new byte[0] : v.getValue().getByteArray(0, vn);
        entries.add(new Entry(new String(raw, StandardCharsets.UTF_8), raw,
            new String(val, StandardCharsets.UTF_8)));
      }
      more = moreFlag.getValue() != 0;
      if (more && entries.isEmpty()) {
        // The merge would take this shard for finished and hide its names: no read can go
        // on after an answer that moved the shard's cursor nowhere.
        throw new IOException("index read of shard." + shard + ": the OSD has more entries"
            + " but returned none (asked for " + max + "; osd_max_omap_entries_per_request"
            + " or osd_max_omap_bytes_per_request too low?)");
      }
    }

    void release() {
      if (completion != null) {
        LIB.rados_aio_wait_for_complete(completion);
        LIB.rados_aio_release(completion);
        completion = null;
      }
      if (iter.getValue() != null) {
        LIB.rados_omap_get_end(iter.getValue());
      }
      LIB.rados_release_read_op(op);
    }
  }

  /** Strings as librados takes them in arrays: pointers to UTF-8 bytes, and lengths. */
  private static final class CStrings {
    final Memory[] strings;
    final Memory pointers;
    final Memory lengths;

    CStrings(List<String> values, boolean nulTerminated) {
      int n = values.size();
      strings = new Memory[n];
      pointers = new Memory((long) Native.POINTER_SIZE * n);
      lengths = new Memory((long) Native.SIZE_T_SIZE * n);
      for (int i = 0; i < n; i++) {
        byte[] b = values.get(i).getBytes(StandardCharsets.UTF_8);
        strings[i] = new Memory(b.length + 1);
        strings[i].write(0, b, 0, b.length);
        strings[i].setByte(b.length, (byte) 0);
        pointers.setPointer((long) Native.POINTER_SIZE * i, strings[i]);
        if (Native.SIZE_T_SIZE == 8) {
          lengths.setLong(8L * i, nulTerminated ? b.length + 1 : b.length);
        } else {
          lengths.setInt(4L * i, nulTerminated ? b.length + 1 : b.length);
        }
      }
    }
  }

  static byte[] cString(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    return Arrays.copyOf(b, b.length + 1);
  }
}
