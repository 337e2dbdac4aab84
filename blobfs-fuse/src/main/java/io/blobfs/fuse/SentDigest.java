package io.blobfs.fuse;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.zip.Checksum;

/**
 * The SHA-256 of the bytes fed to it, as a {@link Checksum} so that
 * {@code FileWriter.transferFrom} feeds it exactly the bytes it sends. It tells, for a
 * passed-through file, whether a chunk sent early is still the file's at the publication
 * ({@link EarlyUpload}, {@code StagedFile.checkSent}), and whether the file still holds
 * its last published version at a close or fsync ({@code StagedFile.Reading.Sums}): a
 * 32-bit CRC32C let a change through with a chance of 2^-32 (only changes within 32 bits
 * are always caught), and that change was then lost with no trace. The JDK's SHA-256
 * (with the CPU's SHA extensions, ~1.5 GB/s here) costs ~5-7 ms per 8 MiB at a send and
 * again at a check; a CRC32C costs about a fifteenth of that.
 *
 * <p>{@link #getValue} is not a digest of 256 bits: use {@link #digest}.
 */
final class SentDigest implements Checksum {
  private final MessageDigest md;

  SentDigest() {
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  @Override
  public void update(int b) {
    md.update((byte) b);
  }

  @Override
  public void update(byte[] b, int off, int len) {
    md.update(b, off, len);
  }

  @Override
  public void update(ByteBuffer buffer) {
    md.update(buffer); // a direct buffer too, without Checksum's copy into an array
  }

  /** The SHA-256 of the bytes so far; resets. */
  byte[] digest() {
    return md.digest();
  }

  @Override
  public long getValue() {
    throw new UnsupportedOperationException("a 256-bit digest: digest()");
  }

  @Override
  public void reset() {
    md.reset();
  }
}
