package io.blobfs.namespace;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Which stripes of a file version are held under another version's file id (issue 16,
 * {@code wip/shared-stripes/DESIGN.md} §2.1): a table of at most {@value #MAX_IDS}
 * <em>borrowed</em> file ids and sorted, disjoint runs {@code (first stripe, count, id
 * index)}. Stripe {@code s} in a run is the key {@code d/<borrowed id>/s}; a stripe in no
 * run is the record's own {@code d/<own id>/s}. The stripe index never changes: a key
 * {@code d/X/s} only ever holds bytes {@code [s*S, (s+1)*S)} of some version, and a map
 * names where the bytes are (flattened), never "stripe s of my base".
 *
 * <p>Built by a takeover ({@link FileWriter#takeOver}) and decoded from a {@code BFS3} record
 * ({@link FileRecord}). The constructor checks what needs no record (id lengths, distinct
 * ids, sorted disjoint non-empty runs, indexes in range, every id used);
 * {@link #check} what does (no borrowed id is the own id, runs within the stripe count).
 */
public record StripeMap(List<String> ids, List<Run> runs) {
  /** Most borrowed ids in one map: bounds the header (and what a delete has to visit). */
  public static final int MAX_IDS = 16;
  /** Runs a map may hold: each is 9 bytes in a header of at most 4 KiB. */
  public static final int MAX_RUNS = 0xffff;
  /** No stripe borrowed: every stripe is the record's own. */
  public static final StripeMap NONE = new StripeMap(List.of(), List.of());

  /** Stripes {@code [first, first + count)} held under {@code ids().get(idIndex)}. */
  public record Run(long first, long count, int idIndex) {
    long end() {
      return first + count;
    }
  }

  public StripeMap {
    ids = List.copyOf(ids);
    runs = List.copyOf(runs);
    if (ids.size() > MAX_IDS) {
      throw new IllegalArgumentException(ids.size() + " borrowed ids, over " + MAX_IDS);
    }
    if (runs.size() > MAX_RUNS) {
      throw new IllegalArgumentException(runs.size() + " runs, over " + MAX_RUNS);
    }
    for (int i = 0; i < ids.size(); i++) {
      String id = ids.get(i);
      if (badId(id)) {
        throw new IllegalArgumentException("borrowed id must be 1-64 bytes, no '/': " + id);
      }
      if (ids.indexOf(id) != i) {
        throw new IllegalArgumentException("borrowed id " + id + " listed twice");
      }
    }
    boolean[] used = new boolean[ids.size()];
    long end = 0;
    for (Run r : runs) {
      // first and count are stored as u32 (9 bytes a run): more stripes than that is a
      // file of 4 Gi stripes, which no takeover produces.
      if (r.first() < end || r.count() < 1 || r.first() > 0xffffffffL
          || r.count() > 0xffffffffL) {
        throw new IllegalArgumentException("runs must be sorted, disjoint and non-empty: "
            + runs);
      }
      if (r.idIndex() < 0 || r.idIndex() >= ids.size()) {
        throw new IllegalArgumentException("run " + r + " names id " + r.idIndex() + " of "
            + ids.size());
      }
      used[r.idIndex()] = true;
      end = r.end();
    }
    for (int i = 0; i < used.length; i++) {
      if (!used[i]) {
        throw new IllegalArgumentException("borrowed id " + ids.get(i) + " in no run");
      }
    }
  }

  /**
   * Whether {@code id} cannot be another version's file id: empty, over 64 bytes of UTF-8
   * (how it is stored, and what the header's size counts), or with a '/' (it is a key part).
   */
  static boolean badId(String id) {
    return id.isEmpty() || id.getBytes(StandardCharsets.UTF_8).length > 64
        || id.indexOf('/') >= 0;
  }

  public boolean isEmpty() {
    return runs.isEmpty();
  }

  /** The borrowed id holding {@code stripe}, or null if it is the record's own. */
  public String idOf(long stripe) {
    int lo = 0;
    int hi = runs.size() - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      Run r = runs.get(mid);
      if (stripe < r.first()) {
        hi = mid - 1;
      } else if (stripe >= r.end()) {
        lo = mid + 1;
      } else {
        return ids.get(r.idIndex());
      }
    }
    return null;
  }

  /** What needs the record: its own id is not borrowed, every run lies within its stripes. */
  void check(String ownId, long stripeCount) {
    if (ids.contains(ownId)) {
      throw new IllegalArgumentException("the record's own id " + ownId + " is borrowed");
    }
    if (!runs.isEmpty() && runs.get(runs.size() - 1).end() > stripeCount) {
      throw new IllegalArgumentException("run " + runs.get(runs.size() - 1)
          + " past the file's " + stripeCount + " stripes");
    }
  }
}
