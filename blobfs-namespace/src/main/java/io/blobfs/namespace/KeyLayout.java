package io.blobfs.namespace;

import io.blobfs.store.StoreLimits;
import java.nio.charset.StandardCharsets;

/**
 * How a namespace lies in the flat key space.
 *
 * <ul>
 *   <li>{@code n/a/b}: the record of file {@code /a/b} (length, file id, maybe the bytes).
 *   <li>{@code n/a/}: the marker of directory {@code /a}, written only when markers are
 *       kept; otherwise a directory is implicit in the names under it.
 *   <li>{@code d/FILEID/N}: stripe N of a file's data. Names never appear here, so a
 *       rename rewrites records and leaves data where it is. It belongs to the one record
 *       that names it: the version with id FILEID, or a later version whose
 *       {@link StripeMap} borrows it ({@link FileRecord#stripeKey}), which took it over
 *       when it replaced the one before ({@link BlobNamespace#createVersion},
 *       {@link TakeoverCommit}). Written only by FILEID's writer, before its record exists;
 *       never written again, deleted once no record names it.
 *   <li>{@code d/FILEID/lock}: while it exists, a writer, a rename or the orphan sweeper
 *       is at work on that file's data, or (ADOPTED) a later version names some of its
 *       keys ({@link DataLocks}).
 *   <li>{@code r/a}: the intent of a directory rename of {@code /a} too large for one
 *       transaction, from its first step to its last ({@link RenameIntent}). No path maps
 *       here, so no file can be mistaken for one.
 *   <li>{@code r/a\u0001ID}: without transactions, the intent of a rename or recursive
 *       delete of {@code /a} by operation {@code ID}. Such a key is created once (by an
 *       exclusive put) and never again once deleted: a store may forget it entirely when it
 *       is deleted (the RADOS name index removes its entry at once instead of keeping a
 *       tombstone). No path holds a control character, so the key names exactly one
 *       directory.
 * </ul>
 *
 * Listing a directory is a scan of {@code n/a/}; data keys and intents never match a name
 * scan.
 */
public final class KeyLayout {
  static final String NAMES = "n";
  static final String DATA = "d/";
  static final String LOCK = "lock";
  static final String RENAMES = "r";

  private final StoreLimits limits;

  public KeyLayout(StoreLimits limits) {
    this.limits = limits;
  }

  /** Key of the record of a file at {@code path}. */
  public String recordKey(FsPath path) {
    return checked(path, NAMES + path);
  }

  /** Key of the marker of directory {@code path}; also the prefix of all names under it. */
  public String dirPrefix(FsPath path) {
    return path.isRoot() ? NAMES + "/" : checked(path, NAMES + path + "/");
  }

  /**
   * Key of the intent of a chunked rename of directory {@code src}: as long as its record
   * key, so any path that passes {@link #checkPath} has one.
   */
  public String renameIntentKey(FsPath src) {
    return checked(src, RENAMES + src);
  }

  /** Between a directory and its operation's id in {@link #leasedIntentKey}. */
  static final char INTENT_ID = '\u0001';

  /**
   * Key of the intent of operation {@code id} on directory {@code src} without
   * transactions: unique to the operation, so a store may drop every trace of it once it
   * is deleted. A path too long for it (within an id's length of the key limit) gets
   * {@link #renameIntentKey}, which any checked path has; its deletion may then leave a
   * trace (the RADOS index's tombstone) until it is cleaned up.
   */
  String leasedIntentKey(FsPath src, String id) {
    String unique = RENAMES + src + INTENT_ID + id;
    return unique.getBytes(StandardCharsets.UTF_8).length <= limits.maxKeyBytes() ? unique
        : renameIntentKey(src);
  }

  /** Whether {@code key} is an intent key of exactly directory {@code dir}. */
  boolean isIntentOf(String key, FsPath dir) {
    String plain = renameIntentKey(dir);
    return key.equals(plain) || key.startsWith(plain + INTENT_ID);
  }

  /** Prefix of the intents of renames of {@code dir} and of directories below it. */
  String renameIntentPrefix(FsPath dir) {
    return dir.isRoot() ? RENAMES + "/" : RENAMES + dir;
  }

  /** Path named by a record or marker key; markers yield their directory. */
  public FsPath pathOf(String nameKey) {
    String p = nameKey.substring(NAMES.length());
    return FsPath.parse(p);
  }

  public static boolean isMarker(String nameKey) {
    return nameKey.endsWith("/");
  }

  /** The file id a data or lock key belongs to; null for a key of neither shape. */
  static String fileIdOf(String dataKey) {
    int slash = dataKey.indexOf('/', DATA.length());
    return dataKey.startsWith(DATA) && slash > DATA.length()
        ? dataKey.substring(DATA.length(), slash) : null;
  }

  static boolean isLock(String dataKey) {
    return dataKey.endsWith("/" + LOCK);
  }

  public String dataKey(String fileId, long stripe) {
    return DATA + fileId + "/" + stripe;
  }

  int maxKeyBytes() {
    return limits.maxKeyBytes();
  }

  /** Fails before any store call if a path's keys would exceed the store's key limit. */
  public void checkPath(FsPath path) {
    dirPrefix(path);
  }

  private String checked(FsPath path, String key) {
    int bytes = key.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > limits.maxKeyBytes()) {
      throw new IllegalPathException(path.toString().substring(0, Math.min(80, path.toString().length())) + "...",
          "its key is " + bytes + " bytes, over the store's limit of " + limits.maxKeyBytes());
    }
    return key;
  }
}
