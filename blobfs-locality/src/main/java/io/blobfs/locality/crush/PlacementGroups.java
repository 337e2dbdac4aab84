package io.blobfs.locality.crush;

import java.nio.charset.StandardCharsets;

/** Object name to placement group, and placement group to CRUSH input, as Ceph computes them. */
public final class PlacementGroups {
  private PlacementGroups() {}

  /** A placement group: pool id and seed (Ceph prints it as {@code pool.hexseed}). */
  public record PgId(int pool, int seed) {
    @Override
    public String toString() {
      return pool + "." + Integer.toHexString(seed);
    }

    public static PgId parse(String s) {
      int dot = s.indexOf('.');
      if (dot <= 0) {
        throw new CrushMapException("not a pg id: " + s);
      }
      try {
        return new PgId(Integer.parseInt(s.substring(0, dot)),
            Integer.parseUnsignedInt(s.substring(dot + 1), 16));
      } catch (NumberFormatException e) {
        throw new CrushMapException("not a pg id: " + s, e);
      }
    }
  }

  /** {@code ceph_stable_mod}: a modulo that stays stable while {@code b} grows to bmask+1. */
  public static int stableMod(int x, int b, int bmask) {
    return (x & bmask) < b ? x & bmask : x & (bmask >>> 1);
  }

  /** The smallest all-ones mask covering {@code n - 1} (Ceph's pg_num_mask). */
  public static int mask(int n) {
    int v = n - 1;
    int bits = v == 0 ? 0 : 32 - Integer.numberOfLeadingZeros(v);
    return (int) ((1L << bits) - 1);
  }

  /**
   * The raw placement seed of an object: rjenkins over the UTF-8 of the locator key (when not
   * empty) or the name, prefixed by {@code namespace + '\u001f'} when a namespace is given.
   */
  public static int objectHash(String name, String locatorKey, String namespace) {
    String key = locatorKey != null && !locatorKey.isEmpty() ? locatorKey : name;
    String s = namespace != null && !namespace.isEmpty() ? namespace + '\u001f' + key : key;
    return RJenkins.strHash(s.getBytes(StandardCharsets.UTF_8));
  }

  /** The PG holding an object in {@code pool}. */
  public static PgId objectToPg(OsdMap.Pool pool, String name, String locatorKey,
      String namespace) {
    int ps = objectHash(name, locatorKey, namespace);
    return new PgId(pool.id(), stableMod(ps, pool.pgNum(), mask(pool.pgNum())));
  }

  /** {@code raw_pg_to_pps}: the CRUSH input x for a PG seed. */
  public static int pps(OsdMap.Pool pool, int seed) {
    int folded = stableMod(seed, pool.pgpNum(), mask(pool.pgpNum()));
    return pool.hashPsPool() ? RJenkins.hash2(folded, pool.id()) : folded + pool.id();
  }
}
