package io.blobfs.namespace;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * What a directory operation that goes in several steps writes before its first step and
 * removes in its last, so that whoever meets it later can finish it
 * ({@link DirectoryMove#finishAtOrUnder}):
 *
 * <ul>
 *   <li>a rename too large for one transaction, or any directory rename without
 *       transactions: its source and destination;
 *   <li>a recursive delete without transactions ({@code dst} null): its directory and the
 *       time it started, so that finishing it removes only names older than the delete
 *       (a file created there since is kept).
 * </ul>
 *
 * Without transactions an intent is a lease ({@code expiresMillis}), renewed by its
 * operation as it goes: nobody finishes it while it runs, which would carry on its work
 * after it returned (moving a file made after it, say). With transactions it has no lease
 * (0), as before leases existed: its chunks are atomic and conditional anyway.
 *
 * <p>The id tells two operations on the same source apart. Stored as lines of UTF-8; paths
 * hold no control characters, so no line break. With transactions under
 * {@link KeyLayout#renameIntentKey} (one key per directory: one operation at a time may be
 * under way on it, its creation in the first chunk excluding any other). Without them
 * under a key of its own ({@link KeyLayout#leasedIntentKey}), written first as a
 * <em>claim</em> ({@code claimed}): only once no other intent of the same directory is
 * found does the claim become the operation's intent ({@link DirectoryMove#begin}), so a
 * claim did nothing yet, and an expired one is simply removed.
 */
record RenameIntent(String id, FsPath src, FsPath dst, long startedMillis, long expiresMillis,
    boolean claimed) {
  private static final String MAGIC = "blobfs-rename-intent-1";
  private static final String LEASED_MAGIC = "blobfs-rename-intent-2";
  private static final String DELETE_MAGIC = "blobfs-delete-intent-1";
  private static final String RENAME_CLAIM_MAGIC = "blobfs-rename-claim-1";
  private static final String DELETE_CLAIM_MAGIC = "blobfs-delete-claim-1";

  /** A transactional rename's intent: no lease. */
  static RenameIntent start(FsPath src, FsPath dst) {
    return new RenameIntent(UUID.randomUUID().toString(), src, dst, 0, 0, false);
  }

  /** A rename's claim without transactions, with a lease until {@code expiresMillis}. */
  static RenameIntent startLeased(FsPath src, FsPath dst, long expiresMillis) {
    return new RenameIntent(UUID.randomUUID().toString(), src, dst, System.currentTimeMillis(),
        expiresMillis, true);
  }

  /** A recursive delete's claim (always without transactions). */
  static RenameIntent startDelete(FsPath dir, long expiresMillis) {
    return new RenameIntent(UUID.randomUUID().toString(), dir, null,
        System.currentTimeMillis(), expiresMillis, true);
  }

  /** The same operation, no longer a claim: it may act. */
  RenameIntent confirmed() {
    return new RenameIntent(id, src, dst, startedMillis, expiresMillis, false);
  }

  boolean isDelete() {
    return dst == null;
  }

  /** True while its operation may still be running: a lease that has not run out. */
  boolean live(long nowMillis) {
    return expiresMillis != 0 && nowMillis <= expiresMillis;
  }

  RenameIntent renewedUntil(long expires) {
    return new RenameIntent(id, src, dst, startedMillis, expires, claimed);
  }

  ByteBuffer encode() {
    String text = isDelete()
        ? (claimed ? DELETE_CLAIM_MAGIC : DELETE_MAGIC) + "\n" + id + "\n" + src + "\n"
            + startedMillis + "\n" + expiresMillis + "\n"
        : expiresMillis == 0 ? MAGIC + "\n" + id + "\n" + src + "\n" + dst + "\n"
        : (claimed ? RENAME_CLAIM_MAGIC : LEASED_MAGIC) + "\n" + id + "\n" + src + "\n" + dst
            + "\n" + expiresMillis + "\n";
    return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
  }

  static RenameIntent decode(String key, byte[] bytes) throws IOException {
    String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
    String magic = lines.length > 0 ? lines[0] : "";
    boolean claim = magic.equals(RENAME_CLAIM_MAGIC) || magic.equals(DELETE_CLAIM_MAGIC);
    int expected = magic.equals(MAGIC) ? 5
        : claim || magic.equals(LEASED_MAGIC) || magic.equals(DELETE_MAGIC) ? 6 : -1;
    if (lines.length != expected || !lines[expected - 1].isEmpty()) {
      throw new CorruptRecordException(key, "not a rename or delete intent");
    }
    try {
      FsPath src = FsPath.parse(lines[2]);
      return switch (magic) {
        case MAGIC -> new RenameIntent(lines[1], src, FsPath.parse(lines[3]), 0, 0, false);
        case LEASED_MAGIC, RENAME_CLAIM_MAGIC -> new RenameIntent(lines[1], src,
            FsPath.parse(lines[3]), 0, Long.parseLong(lines[4]), claim);
        default -> new RenameIntent(lines[1], src, null, Long.parseLong(lines[3]),
            Long.parseLong(lines[4]), claim);
      };
    } catch (IllegalArgumentException e) {
      throw new CorruptRecordException(key, "an intent with a bad path or time: "
          + e.getMessage());
    }
  }

  /** True if a rename of {@code from} to {@code to} asks for what this one does. */
  boolean sameAs(FsPath from, FsPath to) {
    return !isDelete() && src.equals(from) && (dst.equals(to) || dst.equals(to.child(from.name())));
  }

  @Override
  public String toString() {
    return isDelete() ? "delete " + src : "rename " + src + " to " + dst;
  }
}
