package io.blobfs.tyr.engine;

/** When the log is forced to disk, and so what a crash of the machine can lose. */
public enum SyncPolicy {
  /**
   * Before a commit is acknowledged or visible (group commit: concurrent commits share
   * one fsync). Nothing acknowledged is ever lost.
   */
  ALWAYS,
  /**
   * Every {@code sync-interval}: commits are visible and acknowledged at once; a machine
   * crash loses at most the last interval (a killed process loses nothing: the bytes are
   * in the page cache).
   */
  INTERVAL,
  /** Only when a segment is full and at shutdown. For tests and scratch data. */
  NONE
}
