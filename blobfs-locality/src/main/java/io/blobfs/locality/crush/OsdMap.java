package io.blobfs.locality.crush;

import io.blobfs.locality.crush.PlacementGroups.PgId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The parts of Ceph's OSDMap that placement needs, and the up-set computation of
 * {@code _pg_to_raw_osds} / {@code _raw_to_up_osds} for replicated pools.
 *
 * @param pgUpmapped PG ids ("1.a") that have pg_upmap or pg_upmap_items entries
 * @param pgTemp PG ids with pg_temp or primary_temp entries (they change acting, not up)
 */
public record OsdMap(int maxOsd, Map<Integer, Pool> pools, Map<Integer, Osd> osds,
    CrushMap crush, Set<String> pgUpmapped, Set<String> pgTemp) {

  public static final int TYPE_REPLICATED = 1;
  public static final int TYPE_ERASURE = 3;

  public OsdMap {
    pools = Map.copyOf(pools);
    osds = Map.copyOf(osds);
    pgUpmapped = Set.copyOf(pgUpmapped);
    pgTemp = Set.copyOf(pgTemp);
  }

  public record Pool(int id, String name, int type, int size, int crushRule, int pgNum,
      int pgpNum, boolean hashPsPool) {}

  /** An existing OSD; {@code weight} is the reweight in 16.16 (0 = out, 0x10000 = in). */
  public record Osd(int id, boolean up, boolean in, int weight, double primaryAffinity) {}

  /** The up set and its primary (-1 when empty). */
  public record Placement(PgId pg, List<Integer> up, int primary) {}

  public Pool pool(int id) {
    Pool p = pools.get(id);
    if (p == null) {
      throw new CrushMapException("no pool " + id);
    }
    return p;
  }

  /** The OSD weight vector CRUSH sees: reweight for existing OSDs, 0 otherwise. */
  public int[] weights() {
    int[] w = new int[maxOsd];
    for (Osd o : osds.values()) {
      if (o.id() >= 0 && o.id() < maxOsd) {
        w[o.id()] = o.weight();
      }
    }
    return w;
  }

  /** CRUSH's raw output for a PG, with non-existent OSDs removed (replicated pools). */
  public List<Integer> rawOsds(PgId pg) {
    Pool pool = requireReplicated(pg);
    int x = PlacementGroups.pps(pool, pg.seed());
    int[] raw = new CrushMapper(crush).doRule(pool.crushRule(), x, pool.size(), weights());
    List<Integer> out = new ArrayList<>(raw.length);
    for (int osd : raw) {
      if (osds.containsKey(osd)) {
        out.add(osd);
      }
    }
    return out;
  }

  /** The up set of a PG: raw OSDs that exist and are up; primary is the first. */
  public Placement up(PgId pg) {
    if (pgUpmapped.contains(pg.toString())) {
      throw new UnsupportedMapFeatureException("pg " + pg + " has upmap entries");
    }
    for (Osd o : osds.values()) {
      if (o.primaryAffinity() != 1.0) {
        throw new UnsupportedMapFeatureException("osd." + o.id() + " has primary affinity "
            + o.primaryAffinity());
      }
    }
    List<Integer> up = new ArrayList<>();
    for (int osd : rawOsds(pg)) {
      if (osds.get(osd).up()) {
        up.add(osd);
      }
    }
    return new Placement(pg, List.copyOf(up), up.isEmpty() ? -1 : up.get(0));
  }

  /** The up set of the PG holding object {@code name} in pool {@code poolId}. */
  public Placement mapObject(int poolId, String name) {
    return up(PlacementGroups.objectToPg(pool(poolId), name, null, null));
  }

  private Pool requireReplicated(PgId pg) {
    Pool pool = pool(pg.pool());
    if (pool.type() != TYPE_REPLICATED) {
      throw new UnsupportedMapFeatureException("pool " + pool.id() + " is not replicated");
    }
    if (pg.seed() < 0 || pg.seed() >= pool.pgNum()) {
      throw new CrushMapException("pg " + pg + " out of range for pg_num " + pool.pgNum());
    }
    return pool;
  }
}
