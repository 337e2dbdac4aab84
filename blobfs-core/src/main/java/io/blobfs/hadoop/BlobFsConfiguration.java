package io.blobfs.hadoop;

import io.blobfs.namespace.FileRecord;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.store.StoreOptions;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Options.OpenFileOptions;

/**
 * Every configuration key of BlobFS, in one place. File-system keys are read as
 * {@code fs.blob.store.STORE.SUFFIX} first and {@code fs.blob.SUFFIX} second, so one
 * store can differ from the default (as S3A's per-bucket keys do). Backend keys live
 * only under the store profile and are checked against what the backend understands.
 */
public final class BlobFsConfiguration {
  private BlobFsConfiguration() {}

  public static final String SCHEME = "blob";
  public static final String PREFIX = "fs.blob.";
  public static final String STORE_PREFIX = "fs.blob.store.";

  /** Store profile key: backend type ({@code memory}, {@code rados}, {@code tyr}). */
  public static final String TYPE = "type";
  /** Store type of a profile that names none. */
  public static final String DEFAULT_STORE_TYPE = "fs.blob.default.store.type";
  public static final String DEFAULT_STORE_TYPE_DEFAULT = "memory";
  /** Store of a {@code blob:///path} URI with no authority. */
  public static final String DEFAULT_STORE = "fs.blob.default.store";
  public static final String DEFAULT_STORE_DEFAULT = "default";

  // File-system keys (suffixes after fs.blob. or fs.blob.store.STORE.)
  public static final String STRIPE_SIZE = "stripe.size";
  public static final long STRIPE_SIZE_DEFAULT = NamespaceOptions.DEFAULT_STRIPE_SIZE;
  public static final String WRITE_BUFFER_SIZE = "write.buffer.size";
  public static final long WRITE_BUFFER_SIZE_DEFAULT = 8L << 20;
  /**
   * Bytes of small application writes a stream gathers in a heap array before handing them
   * to the writer (see {@code BlobOutputStream}); 0 hands every call through.
   */
  public static final String WRITE_GATHER_SIZE = "write.gather.size";
  public static final long WRITE_GATHER_SIZE_DEFAULT = 64L << 10;
  public static final String WRITE_MAX_INFLIGHT = "write.max-inflight";
  public static final long WRITE_MAX_INFLIGHT_DEFAULT = 64L << 20;
  public static final String INLINE_THRESHOLD = "inline.threshold";
  public static final long INLINE_THRESHOLD_DEFAULT = 64L << 10;
  /** {@code none}: mkdirs is dropped (the paper); {@code keep}: markers, HDFS-like. */
  public static final String DIRECTORY_MARKERS = "directory.markers";
  public static final String DIRECTORY_MARKERS_DEFAULT = "none";
  /** How long an unclosed file's data outlives its writer's last write (orphan sweeper). */
  public static final String WRITER_LEASE = "writer.lease";
  /**
   * Without transactions (RADOS), how long a rename's or delete's lock and a directory
   * operation's intent outlive their holder's last renewal.
   */
  public static final String RENAME_LEASE = "rename.lease";
  public static final String LIST_PAGE_SIZE = "list.page.size";
  public static final long LIST_PAGE_SIZE_DEFAULT = 1000;
  /** Bytes fetched per store read when reading sequentially. */
  public static final String READ_BUFFER_SIZE = "read.buffer.size";
  public static final long READ_BUFFER_SIZE_DEFAULT = 4L << 20;
  /**
   * Range of every read size (read.buffer.size, read.random.min, openFile's buffer size):
   * below a page a stream makes a store call per few bytes (read-ahead multiplies them),
   * and a buffer is one array.
   */
  public static final long READ_SIZE_MIN = 4L << 10;
  public static final long READ_SIZE_MAX = 1L << 30;
  /**
   * Bytes a sequential reader keeps fetching ahead of its position, in read-buffer-sized
   * chunks that the store serves in parallel; 0 turns read-ahead off.
   */
  public static final String READ_AHEAD = "read.ahead";
  public static final long READ_AHEAD_DEFAULT = 32L << 20;
  /** Bytes fetched at least per store read in random mode. */
  public static final String READ_RANDOM_MIN = "read.random.min";
  public static final long READ_RANDOM_MIN_DEFAULT = 64L << 10;
  /** Default read policy of streams: adaptive, sequential, random, whole-file, vector. */
  public static final String READ_POLICY = "read.policy";
  public static final String READ_POLICY_DEFAULT = "adaptive";
  /**
   * create() skips its probes: on RADOS, whose scans walk the pool, the probe for "is the
   * path a directory" costs a scan; an exclusive create still fails, at close.
   */
  public static final String CREATE_PERFORMANCE = "create.performance";
  /**
   * As S3A's {@code fs.s3a.downgrade.syncable.exceptions}: true (the default) makes
   * hflush/hsync, which cannot publish or persist anything before close, a no-op with a
   * warning, so that callers such as Spark's event log keep working; false makes them
   * throw {@link UnsupportedOperationException}, for callers that must not believe their
   * data durable when it is not.
   */
  public static final String DOWNGRADE_SYNCABLE_EXCEPTIONS = "downgrade.syncable.exceptions";
  /** Octal permission reported for every file and directory; there are no permissions. */
  public static final String PERMISSION = "permission";
  public static final String PERMISSION_DEFAULT = "777";

  /** The file-system suffixes, which a store profile may override. */
  public static final Set<String> FS_SUFFIXES = Set.of(STRIPE_SIZE, WRITE_BUFFER_SIZE,
      WRITE_MAX_INFLIGHT, INLINE_THRESHOLD, DIRECTORY_MARKERS, LIST_PAGE_SIZE,
      READ_BUFFER_SIZE, READ_AHEAD, READ_RANDOM_MIN, READ_POLICY, PERMISSION,
      CREATE_PERFORMANCE, DOWNGRADE_SYNCABLE_EXCEPTIONS, WRITER_LEASE, RENAME_LEASE,
      WRITE_GATHER_SIZE);

  /** Settings of one file-system instance, all validated. */
  public record Settings(String storeName, String storeType, String storeTypeKey,
      StoreOptions storeOptions, NamespaceOptions namespace, int readBufferSize,
      long readAhead, int readRandomMin, ReadPolicy readPolicy, short permission,
      boolean downgradeSyncableExceptions, int writeGatherSize) {}

  /** The store type a profile names (or the default type), and the key it came from. */
  public static String[] storeType(String storeName, Configuration conf) {
    String typeKey = STORE_PREFIX + storeName + "." + TYPE;
    String type = conf.getTrimmed(typeKey);
    if (type == null || type.isBlank()) {
      typeKey = DEFAULT_STORE_TYPE;
      type = conf.getTrimmed(DEFAULT_STORE_TYPE, DEFAULT_STORE_TYPE_DEFAULT);
    }
    return new String[] {type.toLowerCase(Locale.ROOT), typeKey};
  }

  /**
   * Parses a store's settings: for each file-system key the store profile's value wins,
   * then the global {@code fs.blob.} value, then the backend's suggested default.
   */
  public static Settings parse(String storeName, Configuration conf,
      Map<String, String> backendDefaults) {
    String storePrefix = STORE_PREFIX + storeName + ".";
    Map<String, String> profile = new HashMap<>(conf.getPropsWithPrefix(storePrefix));
    profile.remove(TYPE);
    String[] typeAndKey = storeType(storeName, conf);
    String type = typeAndKey[0];
    String typeKey = typeAndKey[1];
    Map<String, String> fsValues = new HashMap<>();
    Map<String, String> fromKey = new HashMap<>();
    for (String suffix : FS_SUFFIXES) {
      String v = profile.remove(suffix);
      if (v != null) {
        fsValues.put(suffix, v);
        fromKey.put(suffix, storePrefix + suffix);
      } else if (conf.get(PREFIX + suffix) != null) {
        fsValues.put(suffix, conf.get(PREFIX + suffix));
      } else if (backendDefaults.containsKey(suffix)) {
        fsValues.put(suffix, backendDefaults.get(suffix));
        fromKey.put(suffix, "the " + type + " backend's default for " + PREFIX + suffix);
      }
    }
    StoreOptions fs = new StoreOptions(fsValues, k -> fromKey.getOrDefault(k, PREFIX + k));
    StoreOptions backend = new StoreOptions(storePrefix, profile);

    long stripe = fs.getBytes(STRIPE_SIZE, STRIPE_SIZE_DEFAULT, 4096, 1L << 40);
    long writeBuffer = fs.getBytes(WRITE_BUFFER_SIZE, WRITE_BUFFER_SIZE_DEFAULT, 4096, 1L << 30);
    long inflight = fs.getBytes(WRITE_MAX_INFLIGHT, WRITE_MAX_INFLIGHT_DEFAULT, 0, 1L << 40);
    long inline = fs.getBytes(INLINE_THRESHOLD, INLINE_THRESHOLD_DEFAULT, 0,
        FileRecord.MAX_INLINE);
    String markers = fs.getChoice(DIRECTORY_MARKERS, DIRECTORY_MARKERS_DEFAULT,
        List.of("none", "keep"));
    int page = (int) fs.getLong(LIST_PAGE_SIZE, LIST_PAGE_SIZE_DEFAULT, 1, 100_000);
    int readBuffer = (int) fs.getBytes(READ_BUFFER_SIZE, READ_BUFFER_SIZE_DEFAULT,
        READ_SIZE_MIN, READ_SIZE_MAX);
    long readAhead = fs.getBytes(READ_AHEAD, READ_AHEAD_DEFAULT, 0, 1L << 34);
    int randomMin = (int) fs.getBytes(READ_RANDOM_MIN, READ_RANDOM_MIN_DEFAULT, READ_SIZE_MIN,
        READ_SIZE_MAX);
    ReadPolicy policy = ReadPolicy.parse(fs.getString(READ_POLICY, READ_POLICY_DEFAULT))
        .orElseThrow(() -> fs.bad(READ_POLICY, fs.getString(READ_POLICY, ""),
            "one of " + ReadPolicy.NAMES));
    String permText = fs.getString(PERMISSION, PERMISSION_DEFAULT);
    short permission;
    try {
      permission = Short.parseShort(permText, 8);
      if (permission < 0 || permission > 0777) {
        throw new NumberFormatException();
      }
    } catch (NumberFormatException e) {
      throw fs.bad(PERMISSION, permText, "octal 000-777");
    }
    long buffer = Math.min(writeBuffer, stripe);
    NamespaceOptions ns = new NamespaceOptions(stripe, (int) buffer, Math.max(inflight, buffer),
        (int) inline, markers.equals("keep"), page, fs.getBoolean(CREATE_PERFORMANCE, false),
        writerLease(fs),
        NamespaceOptions.renameLease(fs, RENAME_LEASE, WRITER_LEASE, writerLease(fs)));
    return new Settings(storeName, type, typeKey, backend, ns, readBuffer, readAhead, randomMin,
        policy, permission, fs.getBoolean(DOWNGRADE_SYNCABLE_EXCEPTIONS, true),
        (int) fs.getBytes(WRITE_GATHER_SIZE, WRITE_GATHER_SIZE_DEFAULT, 0, 16L << 20));
  }

  /** At least a minute: a shorter lease would let clock skew decide what is swept. */
  private static java.time.Duration writerLease(StoreOptions fs) {
    java.time.Duration lease =
        fs.getDuration(WRITER_LEASE, NamespaceOptions.DEFAULT_WRITER_LEASE);
    if (lease.compareTo(java.time.Duration.ofMinutes(1)) < 0) {
      throw fs.bad(WRITER_LEASE, fs.getString(WRITER_LEASE, ""), "at least 1m");
    }
    return lease;
  }

  /**
   * The buffer size an {@code openFile()} call asks for ({@code dflt} if none), held to
   * the range of {@link #READ_BUFFER_SIZE}: a bad one names Hadoop's key.
   */
  static int openFileBufferSize(Configuration options, int dflt) {
    String key = OpenFileOptions.FS_OPTION_OPENFILE_BUFFER_SIZE;
    String value = options.getTrimmed(key);
    StoreOptions o = new StoreOptions("", value == null ? Map.of() : Map.of(key, value));
    return (int) o.getBytes(key, dflt, READ_SIZE_MIN, READ_SIZE_MAX);
  }
}
