package io.blobfs.locality.crush;

import io.blobfs.locality.crush.PlacementGroups.PgId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The parts of Ceph's OSDMap that placement needs, and {@code _pg_to_up_acting_osds}: CRUSH
 * (raw set, non-existent OSDs removed), then {@code pg_upmap} / {@code pg_upmap_items}, then
 * the up set (down OSDs removed), primary affinity, and the acting set from {@code pg_temp} /
 * {@code primary_temp}. Replicated pools shift OSDs left over gaps; erasure-coded pools keep
 * every position and mark a hole with {@link CrushMapper#ITEM_NONE}, as Ceph does.
 *
 * <p>A PG's placement depends only on the map, so it is computed once per PG and kept for the
 * life of this (immutable) map: an object lookup is then one string hash and an array read.
 */
public final class OsdMap {
  public static final int TYPE_REPLICATED = 1;
  public static final int TYPE_ERASURE = 3;
  /** CEPH_OSD_MAX_PRIMARY_AFFINITY: 1.0 in 16.16, the default. */
  static final int MAX_PRIMARY_AFFINITY = 0x10000;

  public record Pool(int id, String name, int type, int size, int crushRule, int pgNum,
      int pgpNum, boolean hashPsPool) {
    /** Replicated pools close gaps in a set; erasure-coded ones keep positions. */
    boolean canShiftOsds() {
      return type == TYPE_REPLICATED;
    }
  }

  /**
   * An existing OSD; {@code weight} is the reweight in 16.16 (0 = out, 0x10000 = in);
   * {@code address} its public IP as the monitor lists it (empty when unknown).
   */
  public record Osd(int id, boolean up, boolean in, int weight, double primaryAffinity,
      String address) {
    public Osd(int id, boolean up, boolean in, int weight, double primaryAffinity) {
      this(id, up, in, weight, primaryAffinity, "");
    }

    int primaryAffinityFixed() {
      return (int) Math.round(primaryAffinity * MAX_PRIMARY_AFFINITY);
    }
  }

  /** One {@code pg_upmap_items} pair: OSD {@code from} of the raw set is replaced by {@code to}. */
  public record Remap(int from, int to) {}

  /** The explicit per-PG entries of the map. */
  public record Overrides(Map<PgId, List<Integer>> pgUpmap, Map<PgId, List<Remap>> pgUpmapItems,
      Map<PgId, List<Integer>> pgTemp, Map<PgId, Integer> primaryTemp) {
    public static final Overrides NONE = new Overrides(Map.of(), Map.of(), Map.of(), Map.of());

    public Overrides {
      pgUpmap = Map.copyOf(pgUpmap);
      pgUpmapItems = Map.copyOf(pgUpmapItems);
      pgTemp = Map.copyOf(pgTemp);
      primaryTemp = Map.copyOf(primaryTemp);
    }
  }

  /**
   * Where a PG is: the up set with its primary (what locality uses: where the data is meant
   * to be), and the acting set with its primary (who serves I/O now; differs from up only
   * while pg_temp / primary_temp entries exist, e.g. during backfill). Erasure-coded sets
   * keep holes as {@link CrushMapper#ITEM_NONE}; a primary of -1 means none.
   */
  public record Placement(PgId pg, List<Integer> up, int upPrimary, List<Integer> acting,
      int actingPrimary) {
    public Placement {
      up = List.copyOf(up);
      acting = List.copyOf(acting);
    }

    /** The up primary. */
    public int primary() {
      return upPrimary;
    }
  }

  private final int epoch;
  private final int maxOsd;
  private final Map<Integer, Pool> pools;
  private final Map<Integer, Osd> osds;
  private final CrushMap crush;
  private final Overrides overrides;
  private final CrushMapper mapper;
  /** CRUSH's device weight vector, indexed by OSD id: reweight if the OSD exists, else 0. */
  private final int[] weights;
  /** Primary affinity in 16.16 by OSD id; null when every OSD has the default. */
  private final int[] primaryAffinity;
  /**
   * Computed placements per pool, indexed by PG seed. Filled lazily and racily: a Placement
   * is immutable (final fields), so a thread that sees a slot filled sees it whole, and two
   * threads computing the same slot compute the same value.
   */
  private final Map<Integer, Placement[]> memo = new ConcurrentHashMap<>();

  public OsdMap(int epoch, int maxOsd, Map<Integer, Pool> pools, Map<Integer, Osd> osds,
      CrushMap crush, Overrides overrides) {
    this.epoch = epoch;
    this.maxOsd = maxOsd;
    this.pools = Map.copyOf(pools);
    this.osds = Map.copyOf(osds);
    this.crush = crush;
    this.overrides = overrides;
    this.mapper = new CrushMapper(crush);
    this.weights = new int[maxOsd];
    int[] affinity = null;
    for (Osd o : this.osds.values()) {
      if (o.id() < 0 || o.id() >= maxOsd) {
        throw new CrushMapException("osd." + o.id() + " outside max_osd " + maxOsd);
      }
      weights[o.id()] = o.weight();
      if (o.primaryAffinityFixed() != MAX_PRIMARY_AFFINITY) {
        if (affinity == null) {
          affinity = new int[maxOsd];
          Arrays.fill(affinity, MAX_PRIMARY_AFFINITY);
        }
        affinity[o.id()] = o.primaryAffinityFixed();
      }
    }
    this.primaryAffinity = affinity;
  }

  public int epoch() {
    return epoch;
  }

  public int maxOsd() {
    return maxOsd;
  }

  public Map<Integer, Pool> pools() {
    return pools;
  }

  public Map<Integer, Osd> osds() {
    return osds;
  }

  public CrushMap crush() {
    return crush;
  }

  public Overrides overrides() {
    return overrides;
  }

  public Pool pool(int id) {
    Pool p = pools.get(id);
    if (p == null) {
      throw new UnknownPoolException("no pool " + id + " in OSD map epoch " + epoch);
    }
    return p;
  }

  /** The pool named {@code name}, or null. */
  public Pool pool(String name) {
    for (Pool p : pools.values()) {
      if (p.name().equals(name)) {
        return p;
      }
    }
    return null;
  }

  /** The OSD weight vector CRUSH sees (a copy). */
  public int[] weights() {
    return weights.clone();
  }

  private boolean exists(int osd) {
    return osd >= 0 && osd < maxOsd && osds.containsKey(osd);
  }

  private boolean isUp(int osd) {
    Osd o = exists(osd) ? osds.get(osd) : null;
    return o != null && o.up();
  }

  /** {@code _pg_to_raw_osds}: CRUSH's output with non-existent OSDs removed (or NONE for EC). */
  public List<Integer> rawOsds(PgId pg) {
    Pool pool = checkedPool(pg);
    return rawOsds(pool, PlacementGroups.pps(pool, pg.seed()));
  }

  private List<Integer> rawOsds(Pool pool, int pps) {
    CrushMap.Rule rule = crush.rules().get(pool.crushRule());
    List<Integer> out = new ArrayList<>(pool.size());
    // CrushWrapper::find_rule: a rule of another type than the pool's is not used at all
    if (rule == null || rule.type() != pool.type()) {
      return out;
    }
    for (int osd : mapper.doRule(pool.crushRule(), pps, pool.size(), weights)) {
      if (exists(osd)) {
        out.add(osd);
      } else if (!pool.canShiftOsds()) {
        out.add(CrushMapper.ITEM_NONE);
      }
    }
    return out;
  }

  /** The placement of a PG (computed once per map). */
  public Placement up(PgId pg) {
    Pool pool = checkedPool(pg);
    Placement[] cache = memo.computeIfAbsent(pool.id(), id -> new Placement[pool.pgNum()]);
    Placement p = cache[pg.seed()];
    if (p == null) {
      p = compute(pool, pg);
      cache[pg.seed()] = p;
    }
    return p;
  }

  /** The placement of the PG holding {@code name} in pool {@code poolId}, no namespace. */
  public Placement mapObject(int poolId, String name) {
    return mapObject(poolId, name, null);
  }

  /** The placement of the PG holding {@code name} in namespace {@code ns} of a pool. */
  public Placement mapObject(int poolId, String name, String namespace) {
    return up(PlacementGroups.objectToPg(pool(poolId), name, null, namespace));
  }

  private Placement compute(Pool pool, PgId pg) {
    int pps = PlacementGroups.pps(pool, pg.seed());
    List<Integer> raw = rawOsds(pool, pps);
    applyUpmap(pg, raw);
    List<Integer> up = new ArrayList<>(raw.size());
    for (int osd : raw) {
      if (osd != CrushMapper.ITEM_NONE && isUp(osd)) {
        up.add(osd);
      } else if (!pool.canShiftOsds()) {
        up.add(CrushMapper.ITEM_NONE);
      }
    }
    int upPrimary = applyPrimaryAffinity(pool, pps, up, firstReal(up));

    List<Integer> acting = new ArrayList<>();
    List<Integer> temp = overrides.pgTemp().get(pg);
    if (temp != null) {
      for (int osd : temp) {
        if (osd != CrushMapper.ITEM_NONE && isUp(osd)) {
          acting.add(osd);
        } else if (!pool.canShiftOsds()) {
          acting.add(CrushMapper.ITEM_NONE);
        }
      }
    }
    Integer primaryTemp = overrides.primaryTemp().get(pg);
    int actingPrimary = primaryTemp != null ? primaryTemp : firstReal(acting);
    if (acting.isEmpty()) {
      acting = up;
      if (actingPrimary == -1) {
        actingPrimary = upPrimary;
      }
    }
    return new Placement(pg, up, upPrimary, acting, actingPrimary);
  }

  private static int firstReal(List<Integer> osds) {
    for (int osd : osds) {
      if (osd != CrushMapper.ITEM_NONE) {
        return osd;
      }
    }
    return -1;
  }

  /** {@code _apply_upmap}: explicit mappings, ignored when they name an OSD that is out. */
  private void applyUpmap(PgId pg, List<Integer> raw) {
    List<Integer> explicit = overrides.pgUpmap().get(pg);
    if (explicit != null) {
      boolean targetOut = false;
      for (int osd : explicit) {
        if (osd != CrushMapper.ITEM_NONE && osd >= 0 && osd < maxOsd && weights[osd] == 0) {
          targetOut = true;
          break;
        }
      }
      if (targetOut) {
        return; // Ceph rejects the whole entry, pg_upmap_items included
      }
      raw.clear();
      raw.addAll(explicit);
    }
    List<Remap> items = overrides.pgUpmapItems().get(pg);
    if (items == null) {
      return;
    }
    for (Remap r : items) {
      boolean exists = false;
      int pos = -1;
      boolean toIsOut = r.to() != CrushMapper.ITEM_NONE && r.to() >= 0 && r.to() < maxOsd
          && weights[r.to()] == 0;
      for (int i = 0; i < raw.size(); i++) {
        int osd = raw.get(i);
        if (osd == r.to()) {
          exists = true;
          break;
        }
        if (osd == r.from() && pos < 0 && !toIsOut) {
          pos = i;
        }
      }
      if (!exists && pos >= 0) {
        raw.set(pos, r.to());
      }
    }
  }

  /**
   * {@code _apply_primary_affinity}: an OSD with affinity a &lt; 1 turns down the primary
   * role for a hash-chosen share 1 - a of its PGs; replicated sets move the primary first.
   */
  private int applyPrimaryAffinity(Pool pool, int pps, List<Integer> up, int primary) {
    if (primaryAffinity == null) {
      return primary;
    }
    boolean any = false;
    for (int osd : up) {
      if (osd != CrushMapper.ITEM_NONE && primaryAffinity[osd] != MAX_PRIMARY_AFFINITY) {
        any = true;
        break;
      }
    }
    if (!any) {
      return primary;
    }
    int pos = -1;
    for (int i = 0; i < up.size(); i++) {
      int osd = up.get(i);
      if (osd == CrushMapper.ITEM_NONE) {
        continue;
      }
      int a = primaryAffinity[osd];
      if (a < MAX_PRIMARY_AFFINITY
          && (Integer.toUnsignedLong(RJenkins.hash2(pps, osd)) >>> 16) >= a) {
        if (pos < 0) {
          pos = i; // kept as a fallback should nobody accept
        }
      } else {
        pos = i;
        break;
      }
    }
    if (pos < 0) {
      return primary;
    }
    int chosen = up.get(pos);
    if (pool.canShiftOsds() && pos > 0) {
      up.remove(pos);
      up.add(0, chosen);
    }
    return chosen;
  }

  private Pool checkedPool(PgId pg) {
    Pool pool = pool(pg.pool());
    if (pool.type() != TYPE_REPLICATED && pool.type() != TYPE_ERASURE) {
      throw new UnsupportedMapFeatureException("pool " + pool.id() + " has type "
          + pool.type() + " (neither replicated nor erasure)");
    }
    if (pg.seed() < 0 || pg.seed() >= pool.pgNum()) {
      throw new CrushMapException("pg " + pg + " out of range for pg_num " + pool.pgNum());
    }
    return pool;
  }
}
