package io.blobfs.tyr.engine;

/**
 * When the log is forced to disk, and so which commits a crash of the machine (a power
 * loss, a kernel crash) can take. Under every policy what it takes is a suffix of the
 * commit history, whose numbers are never handed out again: a version a client saw is
 * not given to another state after the restart ({@link VersionCeiling}), so a mutation
 * conditional on a lost version fails with a conflict.
 */
public enum SyncPolicy {
  /**
   * Before a commit is acknowledged or visible (group commit: concurrent commits share
   * one fsync). Nothing acknowledged is ever lost.
   */
  ALWAYS,
  /**
   * Every {@code sync-interval}: commits are visible and acknowledged at once; a machine
   * crash loses at most the commits of the last interval, acknowledged and read ones
   * included (a killed process loses nothing: the bytes are in the page cache).
   */
  INTERVAL,
  /**
   * Only when a segment is full, at a checkpoint and at shutdown: a machine crash loses
   * everything committed since. For tests and scratch data.
   */
  NONE
}
