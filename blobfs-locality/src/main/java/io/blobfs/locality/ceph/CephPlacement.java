package io.blobfs.locality.ceph;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.blobfs.locality.crush.CrushMap;
import io.blobfs.locality.crush.CrushMapException;
import io.blobfs.locality.crush.CrushMapper;
import io.blobfs.locality.crush.MapJsonParser;
import io.blobfs.locality.crush.OsdMap;
import io.blobfs.locality.crush.PlacementGroups;
import io.blobfs.locality.crush.UnknownPoolException;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Where objects of a Ceph cluster live, computed here from the monitor's maps: the maps are
 * read once (three mon commands), kept while the OSD map epoch stays the same, and read again
 * when it moves. The epoch is checked with one small command ({@code osd stat}) at most once
 * per {@code ttl}; a pool the map does not know forces a check at once (it may be newer than
 * our copy). Thread-safe.
 */
public final class CephPlacement {
  static final String OSD_STAT = "{\"prefix\":\"osd stat\",\"format\":\"json\"}";
  static final String OSD_DUMP = "{\"prefix\":\"osd dump\",\"format\":\"json\"}";
  static final String CRUSH_DUMP = "{\"prefix\":\"osd crush dump\",\"format\":\"json\"}";
  /** Reads of a map that keeps changing before we give up rather than answer from a mix. */
  static final int LOAD_ATTEMPTS = 5;
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One consistent copy of the cluster's maps, and when its epoch was last confirmed. */
  public record Snapshot(OsdMap map, Map<Integer, String> hostOfOsd, long checkedNanos) {
    public Snapshot {
      hostOfOsd = Map.copyOf(hostOfOsd);
    }

    public int epoch() {
      return map.epoch();
    }

    /**
     * The hosts of a placement's up OSDs, up primary first, each once; holes of
     * erasure-coded sets are skipped. An OSD under no CRUSH host bucket is named by the
     * address it serves on.
     */
    public List<String> hosts(OsdMap.Placement p) {
      Set<String> hosts = new LinkedHashSet<>();
      if (p.upPrimary() >= 0) {
        hosts.add(hostOf(p.upPrimary()));
      }
      for (int osd : p.up()) {
        if (osd != CrushMapper.ITEM_NONE) {
          hosts.add(hostOf(osd));
        }
      }
      return List.copyOf(hosts);
    }

    public String hostOf(int osd) {
      String host = hostOfOsd.get(osd);
      if (host != null) {
        return host;
      }
      OsdMap.Osd o = map.osds().get(osd);
      if (o != null && !o.address().isEmpty()) {
        return o.address();
      }
      throw new CrushMapException("osd." + osd + " is in no CRUSH host bucket and has no "
          + "address in OSD map epoch " + map.epoch());
    }
  }

  private final MonitorCommands mon;
  private final long ttlNanos;
  private final LongSupplier clock;
  private volatile Snapshot snapshot;

  public CephPlacement(MonitorCommands mon, Duration ttl) {
    this(mon, ttl, System::nanoTime);
  }

  CephPlacement(MonitorCommands mon, Duration ttl, LongSupplier clock) {
    if (ttl.isNegative()) {
      throw new IllegalArgumentException("negative map TTL " + ttl);
    }
    this.mon = mon;
    this.ttlNanos = ttl.toNanos();
    this.clock = clock;
  }

  /** The hosts of an object's up OSDs, primary first (see {@link Snapshot#hosts}). */
  public List<String> hostsOf(String pool, String namespace, String object) throws IOException {
    Snapshot s = current();
    OsdMap.Placement p = placement(s, pool, namespace, object);
    return s.hosts(p);
  }

  /** The placement of an object, from a copy of the maps no older than the TTL. */
  public OsdMap.Placement placementOf(String pool, String namespace, String object)
      throws IOException {
    return placement(current(), pool, namespace, object);
  }

  private OsdMap.Placement placement(Snapshot s, String pool, String namespace, String object)
      throws IOException {
    OsdMap.Pool p = s.map().pool(pool);
    if (p == null) {
      s = refresh(s);
      p = s.map().pool(pool);
      if (p == null) {
        throw new UnknownPoolException("pool '" + pool + "' is not in OSD map epoch "
            + s.epoch());
      }
    }
    return s.map().up(PlacementGroups.objectToPg(p, object, null, namespace));
  }

  /** The maps, confirmed current within the TTL. */
  public Snapshot current() throws IOException {
    Snapshot s = snapshot;
    if (s != null && clock.getAsLong() - s.checkedNanos() < ttlNanos) {
      return s;
    }
    return refresh(s);
  }

  /** Confirms {@code seen} against the monitor's epoch, reading the maps again if it moved. */
  private synchronized Snapshot refresh(Snapshot seen) throws IOException {
    Snapshot s = snapshot;
    long now = clock.getAsLong();
    if (s != seen && s != null && now - s.checkedNanos() < ttlNanos) {
      return s; // another thread refreshed while we waited
    }
    if (s != null && epoch() == s.epoch()) {
      s = new Snapshot(s.map(), s.hostOfOsd(), now);
    } else {
      s = load();
    }
    snapshot = s;
    return s;
  }

  /**
   * Reads the CRUSH map and the OSD map between two readings of the epoch: the CRUSH map is
   * part of the OSD map, so it belongs to that epoch only if the epoch did not move meanwhile.
   */
  private Snapshot load() throws IOException {
    int before = epoch();
    for (int attempt = 1; ; attempt++) {
      String crushJson = mon.command(CRUSH_DUMP);
      String osdJson = mon.command(OSD_DUMP);
      CrushMap crush = MapJsonParser.parseCrush(crushJson);
      OsdMap map = MapJsonParser.parseOsdMap(osdJson, crush);
      if (map.epoch() == before) {
        return new Snapshot(map, MapJsonParser.deviceHosts(crushJson, "host"),
            clock.getAsLong());
      }
      if (attempt == LOAD_ATTEMPTS) {
        throw new MapChangedException("the OSD map moved (epoch " + before + " to "
            + map.epoch() + ") while it was read, " + LOAD_ATTEMPTS + " times in a row");
      }
      before = epoch();
    }
  }

  private int epoch() throws IOException {
    String reply = mon.command(OSD_STAT);
    JsonNode root;
    try {
      root = JSON.readTree(reply);
    } catch (IOException e) {
      throw new CrushMapException("osd stat: malformed JSON: " + abbreviate(reply), e);
    }
    JsonNode epoch = root == null ? null : root.has("osdmap") ? root.path("osdmap").get("epoch")
        : root.get("epoch");
    if (epoch == null || !epoch.isIntegralNumber()) {
      throw new CrushMapException("osd stat: no epoch in " + abbreviate(reply));
    }
    return epoch.asInt();
  }

  private static String abbreviate(String s) {
    return s == null ? "null" : s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }
}
