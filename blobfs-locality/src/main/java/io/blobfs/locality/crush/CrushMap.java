package io.blobfs.locality.crush;

import java.util.List;
import java.util.Map;

/**
 * An immutable CRUSH map: buckets keyed by their (negative) id, rules keyed by rule id,
 * tunables, and the device-id bound {@code maxDevices} (items at or above it are invalid).
 */
public record CrushMap(Map<Integer, Bucket> buckets, Map<Integer, Rule> rules, Tunables tunables,
    int maxDevices) {

  public CrushMap {
    buckets = Map.copyOf(buckets);
    rules = Map.copyOf(rules);
  }

  /** Bucket algorithms as numbered in Ceph's crush.h. */
  public enum BucketAlg {
    UNIFORM, LIST, TREE, STRAW, STRAW2
  }

  /**
   * A bucket. {@code weights} are 16.16 fixed point, one per item, in item order.
   * Only {@link BucketAlg#STRAW2} is placed by this implementation.
   */
  public record Bucket(int id, int typeId, BucketAlg alg, int hash, int[] items, int[] weights) {
    public Bucket {
      if (items.length != weights.length) {
        throw new CrushMapException("bucket " + id + ": " + items.length + " items but "
            + weights.length + " weights");
      }
      items = items.clone();
      weights = weights.clone();
    }

    int size() {
      return items.length;
    }
  }

  /** Rule step operations (the subset of crush.h this implementation interprets). */
  public enum Op {
    TAKE, CHOOSE_FIRSTN, CHOOSE_INDEP, CHOOSELEAF_FIRSTN, CHOOSELEAF_INDEP, EMIT,
    SET_CHOOSE_TRIES, SET_CHOOSELEAF_TRIES, SET_CHOOSE_LOCAL_TRIES,
    SET_CHOOSE_LOCAL_FALLBACK_TRIES, SET_CHOOSELEAF_VARY_R, SET_CHOOSELEAF_STABLE
  }

  /** One rule step; for choose steps {@code arg1} is the count and {@code arg2} the type id. */
  public record Step(Op op, int arg1, int arg2) {}

  public record Rule(int id, int type, List<Step> steps) {
    public Rule {
      steps = List.copyOf(steps);
    }
  }

  public record Tunables(int chooseLocalTries, int chooseLocalFallbackTries,
      int chooseTotalTries, int chooseleafDescendOnce, int chooseleafVaryR,
      int chooseleafStable) {

    /** Ceph's "optimal" tunables since Jewel. */
    public static Tunables jewel() {
      return new Tunables(0, 0, 50, 1, 1, 1);
    }
  }
}
