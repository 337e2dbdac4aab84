package io.blobfs.locality.crush;

import io.blobfs.locality.crush.CrushMap.Bucket;
import io.blobfs.locality.crush.CrushMap.Rule;
import io.blobfs.locality.crush.CrushMap.Step;
import io.blobfs.locality.crush.CrushMap.Tunables;
import java.util.Arrays;

/**
 * The CRUSH rule interpreter ({@code crush_do_rule}) for straw2 maps: TAKE, CHOOSE and
 * CHOOSELEAF in FIRSTN and INDEP modes, EMIT and the SET_* tunable steps. A pure function of
 * the map, the rule, the input {@code x} and the device weight vector (16.16; 0 = out).
 */
public final class CrushMapper {
  /** Placeholder for a position INDEP could not fill (Ceph's CRUSH_ITEM_NONE). */
  public static final int ITEM_NONE = 0x7fffffff;
  private static final int ITEM_UNDEF = 0x7ffffffe;

  private final CrushMap map;
  /** Buckets by {@code -1 - id}: the descent looks one up per level, without boxing. */
  private final Bucket[] buckets;

  public CrushMapper(CrushMap map) {
    this.map = map;
    int n = 0;
    for (int id : map.buckets().keySet()) {
      n = Math.max(n, -id);
    }
    this.buckets = new Bucket[n];
    for (Bucket b : map.buckets().values()) {
      buckets[-1 - b.id()] = b;
    }
  }

  /** The bucket with id {@code item} (negative), or null for a device or a missing bucket. */
  private Bucket bucket(int item) {
    return item < 0 && -1 - item < buckets.length ? buckets[-1 - item] : null;
  }

  /**
   * Maps input {@code x} through rule {@code ruleId}, returning at most {@code resultMax}
   * items. {@code weights[i]} is device i's weight (16.16); devices beyond its length are out.
   */
  public int[] doRule(int ruleId, int x, int resultMax, int[] weights) {
    Rule rule = map.rules().get(ruleId);
    if (rule == null) {
      return new int[0];
    }
    Tunables t = map.tunables();
    int chooseTries = t.chooseTotalTries() + 1;
    int chooseLeafTries = 0;
    int localRetries = t.chooseLocalTries();
    int localFallbackRetries = t.chooseLocalFallbackTries();
    int varyR = t.chooseleafVaryR();
    int stable = t.chooseleafStable();

    int[] result = new int[resultMax];
    int resultLen = 0;
    int[] w = new int[resultMax];
    int[] o = new int[resultMax];
    int[] c = new int[resultMax];
    int wsize = 0;

    for (Step step : rule.steps()) {
      switch (step.op()) {
        case TAKE -> {
          int item = step.arg1();
          if ((item >= 0 && item < map.maxDevices()) || bucket(item) != null) {
            w[0] = item;
            wsize = 1;
          }
        }
        case SET_CHOOSE_TRIES -> { if (step.arg1() > 0) chooseTries = step.arg1(); }
        case SET_CHOOSELEAF_TRIES -> { if (step.arg1() > 0) chooseLeafTries = step.arg1(); }
        case SET_CHOOSE_LOCAL_TRIES -> { if (step.arg1() >= 0) localRetries = step.arg1(); }
        case SET_CHOOSE_LOCAL_FALLBACK_TRIES -> {
          if (step.arg1() >= 0) localFallbackRetries = step.arg1();
        }
        case SET_CHOOSELEAF_VARY_R -> { if (step.arg1() >= 0) varyR = step.arg1(); }
        case SET_CHOOSELEAF_STABLE -> { if (step.arg1() >= 0) stable = step.arg1(); }
        case CHOOSE_FIRSTN, CHOOSELEAF_FIRSTN, CHOOSE_INDEP, CHOOSELEAF_INDEP -> {
          if (wsize == 0) {
            break;
          }
          boolean firstn = step.op() == CrushMap.Op.CHOOSE_FIRSTN
              || step.op() == CrushMap.Op.CHOOSELEAF_FIRSTN;
          boolean recurseToLeaf = step.op() == CrushMap.Op.CHOOSELEAF_FIRSTN
              || step.op() == CrushMap.Op.CHOOSELEAF_INDEP;
          int osize = 0;
          for (int i = 0; i < wsize; i++) {
            int numrep = step.arg1();
            if (numrep <= 0) {
              numrep += resultMax;
              if (numrep <= 0) {
                continue;
              }
            }
            Bucket bucket = bucket(w[i]);
            if (w[i] >= 0 || bucket == null) {
              continue;
            }
            if (firstn) {
              int recurseTries;
              if (chooseLeafTries != 0) {
                recurseTries = chooseLeafTries;
              } else if (t.chooseleafDescendOnce() != 0) {
                recurseTries = 1;
              } else {
                recurseTries = chooseTries;
              }
              Ctx ctx = new Ctx(weights, localRetries, localFallbackRetries, varyR, stable);
              osize += chooseFirstn(ctx, bucket, x, numrep, step.arg2(), o, osize, 0,
                  resultMax - osize, chooseTries, recurseTries, recurseToLeaf, c, osize, 0);
            } else {
              int outSize = Math.min(numrep, resultMax - osize);
              Ctx ctx = new Ctx(weights, localRetries, localFallbackRetries, varyR, stable);
              chooseIndep(ctx, bucket, x, outSize, numrep, step.arg2(), o, osize, 0, chooseTries,
                  chooseLeafTries != 0 ? chooseLeafTries : 1, recurseToLeaf, c, osize, 0);
              osize += outSize;
            }
          }
          if (recurseToLeaf) {
            System.arraycopy(c, 0, o, 0, osize);
          }
          int[] tmp = o;
          o = w;
          w = tmp;
          wsize = osize;
        }
        case EMIT -> {
          for (int i = 0; i < wsize && resultLen < resultMax; i++) {
            result[resultLen++] = w[i];
          }
          wsize = 0;
        }
        default -> throw new UnsupportedMapFeatureException("rule step " + step.op());
      }
    }
    return Arrays.copyOf(result, resultLen);
  }

  private record Ctx(int[] weights, int localRetries, int localFallbackRetries, int varyR,
      int stable) {}

  private boolean isOut(int[] weights, int item, int x) {
    if (item >= weights.length) {
      return true;
    }
    long wt = weights[item] & 0xffffffffL;
    if (wt >= 0x10000) {
      return false;
    }
    if (wt == 0) {
      return true;
    }
    return (RJenkins.hash2(x, item) & 0xffffL) >= wt;
  }

  /**
   * {@code crush_choose_firstn}. {@code out}/{@code out2} are used from offsets
   * {@code outBase}/{@code out2Base}; {@code outpos} is relative to those bases.
   */
  private int chooseFirstn(Ctx ctx, Bucket bucket, int x, int numrep, int type, int[] out,
      int outBase, int outpos, int outSize, int tries, int recurseTries, boolean recurseToLeaf,
      int[] out2, int out2Base, int parentR) {
    int count = outSize;
    int item = 0;
    for (int rep = ctx.stable() != 0 ? 0 : outpos; rep < numrep && count > 0; rep++) {
      int ftotal = 0;
      boolean skipRep = false;
      boolean retryDescent;
      do {
        retryDescent = false;
        Bucket in = bucket;
        int flocal = 0;
        boolean retryBucket;
        do {
          boolean collide = false;
          boolean reject;
          retryBucket = false;
          int r = rep + parentR + ftotal;
          if (in.size() == 0) {
            reject = true;
          } else {
            if (ctx.localFallbackRetries() > 0 && flocal >= (in.size() >> 1)
                && flocal > ctx.localFallbackRetries()) {
              throw new UnsupportedMapFeatureException(
                  "choose_local_fallback_tries > 0 (bucket_perm_choose) is not implemented");
            }
            item = chooseInBucket(in, x, r);
            if (item >= map.maxDevices()) {
              skipRep = true;
              break;
            }
            int itemType;
            if (item < 0) {
              Bucket sub = bucket(item);
              if (sub == null) {
                skipRep = true;
                break;
              }
              itemType = sub.typeId();
            } else {
              itemType = 0;
            }
            if (itemType != type) {
              if (item >= 0) {
                skipRep = true;
                break;
              }
              in = bucket(item);
              retryBucket = true;
              continue;
            }
            for (int i = 0; i < outpos; i++) {
              if (out[outBase + i] == item) {
                collide = true;
                break;
              }
            }
            reject = false;
            if (!collide && recurseToLeaf) {
              if (item < 0) {
                int subR = ctx.varyR() != 0 ? r >> (ctx.varyR() - 1) : 0;
                int got = chooseFirstn(ctx, bucket(item), x,
                    ctx.stable() != 0 ? 1 : outpos + 1, 0, out2, out2Base, outpos, count,
                    recurseTries, 0, false, null, 0, subR);
                if (got <= outpos) {
                  reject = true;
                }
              } else {
                out2[out2Base + outpos] = item;
              }
            }
            if (!reject && !collide && itemType == 0) {
              reject = isOut(ctx.weights(), item, x);
            }
          }
          if (reject || collide) {
            ftotal++;
            flocal++;
            if (collide && flocal <= ctx.localRetries()) {
              retryBucket = true;
            } else if (ctx.localFallbackRetries() > 0
                && flocal <= in.size() + ctx.localFallbackRetries()) {
              retryBucket = true;
            } else if (ftotal < tries) {
              retryDescent = true;
            } else {
              skipRep = true;
            }
          }
        } while (retryBucket);
      } while (retryDescent);
      if (skipRep) {
        continue;
      }
      out[outBase + outpos] = item;
      outpos++;
      count--;
    }
    return outpos;
  }

  /**
   * {@code crush_choose_indep}. Positions {@code rep} are relative: slot {@code rep} lives at
   * {@code out[outBase + rep]} and {@code out2[out2Base + rep]}.
   */
  private void chooseIndep(Ctx ctx, Bucket bucket, int x, int left, int numrep, int type,
      int[] out, int outBase, int outpos, int tries, int recurseTries, boolean recurseToLeaf,
      int[] out2, int out2Base, int parentR) {
    int endpos = outpos + left;
    for (int rep = outpos; rep < endpos; rep++) {
      out[outBase + rep] = ITEM_UNDEF;
      if (out2 != null) {
        out2[out2Base + rep] = ITEM_UNDEF;
      }
    }
    for (int ftotal = 0; left > 0 && ftotal < tries; ftotal++) {
      for (int rep = outpos; rep < endpos; rep++) {
        if (out[outBase + rep] != ITEM_UNDEF) {
          continue;
        }
        Bucket in = bucket;
        for (;;) {
          int r = rep + parentR;
          if (in.alg() == CrushMap.BucketAlg.UNIFORM && in.size() % numrep == 0) {
            r += (numrep + 1) * ftotal;
          } else {
            r += numrep * ftotal;
          }
          if (in.size() == 0) {
            break;
          }
          int item = chooseInBucket(in, x, r);
          Bucket sub = bucket(item);
          if (item >= map.maxDevices() || (item < 0 && sub == null)) {
            out[outBase + rep] = ITEM_NONE;
            if (out2 != null) {
              out2[out2Base + rep] = ITEM_NONE;
            }
            left--;
            break;
          }
          int itemType = item < 0 ? sub.typeId() : 0;
          if (itemType != type) {
            if (item >= 0) {
              out[outBase + rep] = ITEM_NONE;
              if (out2 != null) {
                out2[out2Base + rep] = ITEM_NONE;
              }
              left--;
              break;
            }
            in = sub;
            continue;
          }
          boolean collide = false;
          for (int i = outpos; i < endpos; i++) {
            if (out[outBase + i] == item) {
              collide = true;
              break;
            }
          }
          if (collide) {
            break;
          }
          if (recurseToLeaf) {
            if (item < 0) {
              chooseIndep(ctx, sub, x, 1, numrep, 0, out2, out2Base, rep, recurseTries, 0,
                  false, null, 0, r);
              if (out2[out2Base + rep] == ITEM_NONE) {
                break;
              }
            } else {
              out2[out2Base + rep] = item;
            }
          }
          if (itemType == 0 && isOut(ctx.weights(), item, x)) {
            break;
          }
          out[outBase + rep] = item;
          left--;
          break;
        }
      }
    }
    for (int rep = outpos; rep < endpos; rep++) {
      if (out[outBase + rep] == ITEM_UNDEF) {
        out[outBase + rep] = ITEM_NONE;
      }
      if (out2 != null && out2[out2Base + rep] == ITEM_UNDEF) {
        out2[out2Base + rep] = ITEM_NONE;
      }
    }
  }

  private static int chooseInBucket(Bucket in, int x, int r) {
    if (in.alg() != CrushMap.BucketAlg.STRAW2) {
      throw new UnsupportedMapFeatureException(
          "bucket " + in.id() + " uses " + in.alg() + "; only straw2 is implemented");
    }
    return Straw2.choose(in, x, r);
  }
}
