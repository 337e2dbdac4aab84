package io.blobfs.fuse;

import java.util.concurrent.atomic.LongAdder;

/**
 * Where the publications of a mount spent their bytes and time: how many versions went
 * up, how many of their bytes the background upload had sent before the close or fsync
 * ({@link EarlyUpload}) and how many the publication itself sent, how long publications
 * waited for the background upload to stop and how long they took in all. The request
 * counts ({@code FuseSession}) say how much the kernel asked; these say how much of it
 * the store saw and when. Logged at unmount.
 */
final class WriteStats {
  private final LongAdder publications = new LongAdder();
  private final LongAdder wholeUploads = new LongAdder();
  private final LongAdder earlyBytes = new LongAdder();
  private final LongAdder earlyUsedBytes = new LongAdder();
  private final LongAdder resentBytes = new LongAdder();
  private final LongAdder publishBytes = new LongAdder();
  private final LongAdder waitNanos = new LongAdder();
  private final LongAdder publishNanos = new LongAdder();

  /** A background round sent {@code bytes} (used or not). */
  void early(long bytes) {
    earlyBytes.add(bytes);
  }

  /**
   * A publication sent {@code bytes} of the background upload a second time (chunks of a
   * passed-through file that changed after their early send); counted in its own bytes.
   */
  void resent(long bytes) {
    resentBytes.add(bytes);
  }

  long resentBytes() {
    return resentBytes.sum();
  }

  /**
   * A publication: {@code used} bytes came from the background upload, {@code sent} it sent
   * itself ({@code whole}: from byte 0, the background upload unusable or absent).
   */
  void published(long used, long sent, boolean whole, long waitedNanos, long tookNanos) {
    publications.increment();
    if (whole) {
      wholeUploads.increment();
    }
    earlyUsedBytes.add(used);
    publishBytes.add(sent);
    waitNanos.add(waitedNanos);
    publishNanos.add(tookNanos);
  }

  long publications() {
    return publications.sum();
  }

  long wholeUploads() {
    return wholeUploads.sum();
  }

  long publishBytes() {
    return publishBytes.sum();
  }

  long earlyBytes() {
    return earlyBytes.sum();
  }

  String summary() {
    return publications.sum() + " publications (" + wholeUploads.sum() + " whole), "
        + earlyBytes.sum() + " bytes uploaded in the background (" + earlyUsedBytes.sum()
        + " used, " + resentBytes.sum() + " sent again), " + publishBytes.sum()
        + " bytes by the publications, "
        + waitNanos.sum() / 1_000_000 + " ms waiting for the background upload, "
        + publishNanos.sum() / 1_000_000 + " ms publishing";
  }
}
