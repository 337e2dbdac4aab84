package io.blobfs.rados;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.blobfs.locality.ceph.CephPlacement;
import io.blobfs.locality.crush.CephTools;
import io.blobfs.locality.crush.CrushMapper;
import io.blobfs.locality.crush.OsdMap;
import io.blobfs.locality.crush.PlacementGroups;
import io.blobfs.locality.crush.PlacementGroups.PgId;
import io.blobfs.rados.CephClusterExtension.Cluster;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Client-side CRUSH against the monitor of the multi-OSD cluster (3 OSDs under CRUSH hosts
 * host-a/b/c): every placement we compute must equal what {@code ceph osd map} says, for
 * replicated pools of sizes 1 to 3, an erasure-coded pool, an explicit pg_upmap, a
 * pg_upmap_items entry, primary affinity, namespaces and non-ASCII names; then block
 * locations of a multi-stripe {@code blob://} file must be exactly those hosts.
 */
@ExtendWith(CephClusterExtension.class)
@Cluster(layout = "multi")
class RadosPlacementIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Pools of this test only (deleted afterwards); "blobfs" is the cluster's own, size 1. */
  private static final String R3 = "loc-r3";
  private static final String R2 = "loc-r2";
  private static final String EC = "loc-ec";
  private static final List<String> POOLS = List.of("blobfs", R3, R2, EC);

  private static CephTestCluster.Env env;
  private static RadosBlobStore admin;
  private static CephPlacement placement;

  @BeforeAll
  static void setUp(CephTestCluster.Env cluster) throws IOException {
    env = cluster;
    removeOverrides();
    ceph("osd", "erasure-code-profile", "set", "loc-k2m1", "k=2", "m=1",
        "crush-failure-domain=host");
    ceph("osd", "pool", "create", EC, "8", "8", "erasure", "loc-k2m1", "--autoscale-mode=off");
    ceph("osd", "pool", "create", R3, "16", "16", "replicated", "--autoscale-mode=off");
    ceph("osd", "pool", "set", R3, "size", "3");
    ceph("osd", "pool", "create", R2, "16", "16", "replicated", "--autoscale-mode=off");
    ceph("osd", "pool", "set", R2, "size", "2", "--yes-i-really-mean-it");
    // client.admin: the test's own pools are outside client.blobfs's caps
    admin = open("blobfs", "placement-" + ProcessHandle.current().pid(), "admin",
        env.adminKeyring());
    placement = new CephPlacement(admin::monCommand, Duration.ZERO);
    addOverrides();
  }

  @AfterAll
  static void tearDown() throws IOException {
    if (env == null) {
      return;
    }
    try {
      ceph("osd", "unset", "noup");
      removeOverrides();
      for (String pool : List.of(R3, R2, EC)) {
        ceph("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it");
      }
      ceph("osd", "erasure-code-profile", "rm", "loc-k2m1");
      ceph("config", "rm", "osd.2", "osd_max_markdown_count");
      waitForOsds(3);
    } finally {
      if (admin != null) {
        admin.close();
      }
    }
  }

  /**
   * A pg_upmap that reorders loc-r3's PG 0 (its primary changes), a pg_upmap_items that moves
   * one replica of a loc-r2 PG onto the OSD CRUSH left out, and osd.1 at primary affinity 0.5.
   */
  private static void addOverrides() throws IOException {
    List<Integer> up = upOf(R3, 0);
    List<Integer> reversed = new ArrayList<>(up);
    java.util.Collections.reverse(reversed);
    List<String> cmd = new ArrayList<>(List.of("osd", "pg-upmap", poolId(R3) + ".0"));
    reversed.forEach(o -> cmd.add(String.valueOf(o)));
    ceph(cmd.toArray(new String[0]));
    List<Integer> pair = upOf(R2, 1);
    int missing = 3 - pair.get(0) - pair.get(1); // OSD ids are 0, 1, 2
    ceph("osd", "pg-upmap-items", poolId(R2) + ".1", String.valueOf(pair.get(1)),
        String.valueOf(missing));
    ceph("osd", "primary-affinity", "osd.1", "0.5");
  }

  private static void removeOverrides() throws IOException {
    ceph("osd", "primary-affinity", "osd.1", "1");
    JsonNode dump = JSON.readTree(ceph("osd", "dump", "-f", "json"));
    for (JsonNode e : dump.path("pg_upmap")) {
      ceph("osd", "rm-pg-upmap", e.get("pgid").asText());
    }
    for (JsonNode e : dump.path("pg_upmap_items")) {
      ceph("osd", "rm-pg-upmap-items", e.get("pgid").asText());
    }
  }

  @Test
  void everyMappingAgreesWithTheMonitorsOsdMap() throws Exception {
    assertAgreement(names(240), true);
    // the same map (EC pool, pg_upmap, pg_upmap_items, primary affinity), offline
    CephPlacement.Snapshot s = placement.current();
    Offline o = assertOfflineAgreement(s, POOLS, names(40));
    assertThat(o.movedByUpmap()).as("PGs Ceph moves off CRUSH's order by upmaps").isPositive();
    assertThat(o.primaryByAffinity()).as("PGs whose primary Ceph moves by affinity")
        .isPositive();
  }

  /**
   * osd.2 held down (noup): replicated sets close up over it, erasure-coded sets keep a
   * hole in its position, and the hosts of an EC object skip the hole.
   */
  @Test
  void aDownOsdLeavesGapsAndErasureHoles() throws Exception {
    // An OSD marked down while alive shuts itself down after osd_max_markdown_count (5)
    // markings in 10 minutes: repeated runs must not reach that.
    ceph("config", "set", "osd.2", "osd_max_markdown_count", "1000");
    ceph("osd", "set", "noup");
    try {
      ceph("osd", "down", "2");
      waitForOsds(2);
      List<OsdMap.Placement> ec = assertAgreement(names(60), false);
      long holes = ec.stream().filter(p -> p.up().contains(CrushMapper.ITEM_NONE)).count();
      assertThat(holes).as("EC placements with a hole").isPositive();
      CephPlacement.Snapshot s = placement.current();
      assertThat(s.map().osds().get(2).up()).isFalse();
      Offline o = assertOfflineAgreement(s, POOLS, names(10));
      assertThat(o.ecHoles()).as("EC PGs with a hole, offline").isPositive();
      for (String name : names(60)) {
        List<String> hosts = placement.hostsOf(EC, "", name);
        assertThat(hosts).doesNotContain("host-c").isNotEmpty();
        assertThat(hosts.size()).isLessThanOrEqualTo(2);
      }
    } finally {
      ceph("osd", "unset", "noup");
    }
    waitForOsds(3);
  }

  /**
   * pg_temp and primary_temp: the acting set and primary. The OSDs have such entries removed
   * within about half a second (peering finds the up set complete), so each is set and
   * compared at once through mon commands, at one epoch, and again if it was gone.
   */
  @Test
  void pgTempGivesTheActingSet() throws Exception {
    int pool = poolId(R3);
    List<Integer> reversed = new ArrayList<>(upOf(R3, 3));
    java.util.Collections.reverse(reversed);
    try {
      assertActingUnderTemp(3, JSON.createObjectNode().put("prefix", "osd pg-temp")
          .put("pgid", pool + ".3").set("id", JSON.valueToTree(reversed)).toString());
    } finally {
      ceph("osd", "pg-temp", pool + ".3"); // normally the OSDs have removed it already
    }
  }

  @Test
  void primaryTempGivesTheActingPrimary() throws Exception {
    int pool = poolId(R3);
    try {
      assertActingUnderTemp(4, JSON.createObjectNode().put("prefix", "osd primary-temp")
          .put("pgid", pool + ".4").put("id", upOf(R3, 4).get(1)).toString());
    } finally {
      admin.monCommand(JSON.createObjectNode().put("prefix", "osd primary-temp")
          .put("pgid", pool + ".4").put("id", -1).toString());
    }
  }

  private static void assertActingUnderTemp(int seed, String setTemp) throws Exception {
    List<String> names = new ArrayList<>();
    for (String name : names(240)) {
      if (placement.placementOf(R3, "", name).pg().seed() == seed && names.size() < 8) {
        names.add(name);
      }
    }
    List<String> attempts = new ArrayList<>();
    for (int attempt = 1; attempt <= 8; attempt++) {
      admin.monCommand(setTemp);
      CephPlacement.Snapshot s = placement.current();
      OsdMap.Overrides o = s.map().overrides();
      if (o.pgTemp().isEmpty() && o.primaryTemp().isEmpty()) {
        attempts.add("epoch " + s.epoch() + ": already removed");
        continue;
      }
      List<String> mismatches = new ArrayList<>();
      int differ = 0;
      JsonNode ceph = null;
      for (String name : names) {
        ceph = osdMap(R3, name, "");
        if (ceph.get("epoch").asInt() != s.epoch()) {
          break;
        }
        OsdMap.Placement ours = s.map().up(
            PlacementGroups.objectToPg(s.map().pool(R3), name, null, ""));
        if (!ours.acting().equals(ours.up()) || ours.actingPrimary() != ours.upPrimary()) {
          differ++;
        }
        if (!render(ours).equals(render(ceph))) {
          mismatches.add(name + " ceph=" + render(ceph) + " ours=" + render(ours));
        }
        ceph = null;
      }
      if (ceph != null) {
        attempts.add("epoch " + s.epoch() + ": monitor moved to " + ceph.get("epoch"));
        continue;
      }
      System.out.printf("live: %d/%d placements agree in a PG with %s (acting != up in %d;"
          + " attempt %d)%n", names.size() - mismatches.size(), names.size(),
          o.pgTemp().isEmpty() ? "primary_temp" : "pg_temp", differ, attempt);
      assertThat(mismatches).isEmpty();
      assertThat(differ).isEqualTo(names.size());
      // the map of that epoch, offline: the monitor keeps it after the OSDs drop the entry
      Offline offline = assertOfflineAgreement(s, List.of(R3), names);
      assertThat(offline.actingNotUp()).as("PGs whose acting set or primary Ceph takes from "
          + "the temp entry, offline").isPositive();
      return;
    }
    throw new AssertionError("the temp entry was gone before it could be compared: "
        + attempts);
  }

  /** What an offline comparison saw in Ceph's own answers (to show the map had the case). */
  record Offline(int pgs, int objects, int movedByUpmap, int primaryByAffinity,
      int actingNotUp, int ecHoles) {}

  /**
   * The monitor's own OSD map of {@code s}'s epoch ({@code ceph osd getmap E}), offline
   * through Ceph's osdmaptool, against our placements from {@code s}: every PG of
   * {@code pools} with {@code --test-map-pgs-dump-all} (up set, up primary, acting set,
   * acting primary; plain {@code --test-map-pgs-dump} prints only the acting side), and each
   * name in each pool with {@code --test-map-object} (PG and acting set). Names are in the
   * pools' default namespace only: {@code --test-map-object} takes no namespace (it maps the
   * name with an empty locator), so namespaced names are compared live only. The map is
   * fetched by epoch, so it is that of {@code s} even if the cluster has moved on since
   * (pg_temp entries in particular are gone in under a second); its epoch is checked.
   */
  private static Offline assertOfflineAgreement(CephPlacement.Snapshot s, List<String> pools,
      List<String> names) throws Exception {
    CephTools.require();
    long start = System.nanoTime();
    java.nio.file.Path file = Files.createTempFile("osdmap-" + s.epoch() + "-", ".bin");
    try {
      ceph("osd", "getmap", String.valueOf(s.epoch()), "-o", file.toString());
      assertThat(CephTools.epoch(file)).as("epoch of the exported map").isEqualTo(s.epoch());
      OsdMap map = s.map();
      int pgs = 0;
      int pgAgree = 0;
      int objects = 0;
      int objectAgree = 0;
      int moved = 0;
      int byAffinity = 0;
      int actingNotUp = 0;
      int holes = 0;
      List<String> mismatches = new ArrayList<>();
      for (String name : pools) {
        OsdMap.Pool pool = map.pool(name);
        Map<String, CephTools.PgMapping> ref = CephTools.mapPgs(file, pool.id(), List.of());
        assertThat(ref).as("PGs osdmaptool lists for " + name).hasSize(pool.pgNum());
        for (int seed = 0; seed < pool.pgNum(); seed++) {
          PgId pg = new PgId(pool.id(), seed);
          CephTools.PgMapping ceph = ref.get(pg.toString());
          String ours = CephTools.render(map.up(pg));
          pgs++;
          if (ceph != null && ours.equals(ceph.render())) {
            pgAgree++;
          } else if (mismatches.size() < 5) {
            mismatches.add("PG " + pg + " ceph=" + (ceph == null ? null : ceph.render())
                + " ours=" + ours);
          }
          if (ceph == null) {
            continue;
          }
          boolean upmapped = map.overrides().pgUpmap().containsKey(pg)
              || map.overrides().pgUpmapItems().containsKey(pg);
          if (upmapped && !ceph.up().equals(ceph.raw())) {
            moved++;
          }
          // same OSDs as CRUSH chose, all up, yet another primary: primary affinity's doing
          if (!upmapped && Set.copyOf(ceph.up()).equals(Set.copyOf(ceph.raw()))
              && ceph.upPrimary() != ceph.rawPrimary()) {
            byAffinity++;
          }
          if (!ceph.acting().equals(ceph.up()) || ceph.actingPrimary() != ceph.upPrimary()) {
            actingNotUp++;
          }
          if (ceph.up().contains(CrushMapper.ITEM_NONE)) {
            holes++;
          }
        }
        for (String object : names) {
          CephTools.ObjectMapping ceph = CephTools.mapObject(file, object, pool.id(),
              List.of());
          OsdMap.Placement ours = map.up(PlacementGroups.objectToPg(pool, object, null, ""));
          objects++;
          if (ceph.pgid().equals(ours.pg().toString()) && ceph.acting().equals(ours.acting())) {
            objectAgree++;
          } else if (mismatches.size() < 5) {
            mismatches.add(name + "/" + object + " ceph=" + ceph + " ours=" + ours);
          }
        }
      }
      System.out.printf("offline osdmaptool: %d/%d PGs, %d/%d objects agree (epoch %d; %s;"
          + " in Ceph's answers: %d PGs moved by upmaps, %d primaries moved by affinity,"
          + " %d acting != up, %d EC holes; %d ms)%n", pgAgree, pgs, objectAgree, objects,
          s.epoch(), String.join(",", pools), moved, byAffinity, actingNotUp, holes,
          (System.nanoTime() - start) / 1_000_000);
      assertThat(mismatches).isEmpty();
      return new Offline(pgs, objects, moved, byAffinity, actingNotUp, holes);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /**
   * A sample through the ceph CLI itself, namespace as its positional argument. Names outside
   * Unicode's basic plane are left out here: the CLI sends them to the monitor as JSON
   * surrogate pairs, which the monitor decodes into other bytes than the object's UTF-8 name,
   * so the CLI answers for a different name (librados and our mon commands send the bytes).
   */
  @Test
  void theCephCliAgrees() throws IOException {
    List<String> names = names(24).stream()
        .filter(n -> n.codePoints().allMatch(c -> c < 0x10000)).limit(12).toList();
    for (int i = 0; i < names.size(); i++) {
      String pool = POOLS.get(i % POOLS.size());
      String ns = i % 2 == 0 ? "" : "ns-" + i;
      List<String> cmd = new ArrayList<>(List.of("osd", "map", pool, names.get(i)));
      if (!ns.isEmpty()) {
        cmd.add(ns);
      }
      cmd.addAll(List.of("-f", "json"));
      JsonNode ceph = JSON.readTree(ceph(cmd.toArray(new String[0])));
      OsdMap.Placement ours = placement.placementOf(pool, ns, names.get(i));
      assertThat(render(ours)).as(pool + " " + ns + " " + names.get(i))
          .isEqualTo(render(ceph));
    }
  }

  /**
   * Ours against the monitor's {@code osd map} (the command the CLI sends, sent here through
   * librados to avoid a process per name) for every pool and a namespace per name. Returns
   * the EC placements.
   */
  private static List<OsdMap.Placement> assertAgreement(List<String> names, boolean overrides)
      throws IOException {
    int agree = 0;
    List<String> mismatches = new ArrayList<>();
    List<OsdMap.Placement> ec = new ArrayList<>();
    Set<Integer> primaries = new TreeSet<>();
    for (int i = 0; i < names.size(); i++) {
      String ns = switch (i % 3) {
        case 0 -> "";
        case 1 -> "d";
        default -> "ns-é-" + (i % 7);
      };
      for (String pool : POOLS) {
        JsonNode ceph = osdMap(pool, names.get(i), ns);
        OsdMap.Placement ours = placement.placementOf(pool, ns, names.get(i));
        if (ceph.get("epoch").asInt() != placement.current().epoch()) {
          // the map moved between the two questions: ask both again
          ours = placement.placementOf(pool, ns, names.get(i));
          ceph = osdMap(pool, names.get(i), ns);
        }
        if (render(ours).equals(render(ceph))) {
          agree++;
        } else if (mismatches.size() < 5) {
          mismatches.add(pool + "/" + ns + "/" + names.get(i) + " ceph=" + render(ceph)
              + " ours=" + render(ours));
        }
        if (pool.equals(EC)) {
          ec.add(ours);
        }
        if (pool.equals(R3)) {
          primaries.add(ours.upPrimary());
        }
      }
    }
    System.out.printf("live: %d/%d placements agree with the monitor (epoch %d)%n", agree,
        names.size() * POOLS.size(), placement.current().epoch());
    assertThat(mismatches).isEmpty();
    if (overrides) {
      OsdMap.Overrides o = placement.current().map().overrides();
      assertThat(o.pgUpmap()).hasSize(1);
      assertThat(o.pgUpmapItems()).hasSize(1);
      assertThat(placement.current().map().osds().get(1).primaryAffinity()).isEqualTo(0.5);
      // Which OSDs lead depends on the pool's id (new each run) and on osd.1's affinity:
      // agreement above is the proof; here only that primaries are not all one OSD.
      assertThat(primaries).hasSizeGreaterThan(1);
    }
    return ec;
  }

  private static JsonNode osdMap(String pool, String object, String ns) throws IOException {
    ObjectNode cmd = JSON.createObjectNode().put("prefix", "osd map").put("pool", pool)
        .put("object", object).put("format", "json");
    if (!ns.isEmpty()) {
      cmd.put("nspace", ns);
    }
    return JSON.readTree(admin.monCommand(cmd.toString()));
  }

  private static String render(OsdMap.Placement p) {
    return CephTools.render(p);
  }

  private static String render(JsonNode ceph) {
    return ceph.get("pgid").asText() + " up=" + ints(ceph.get("up")) + "/"
        + ceph.get("up_primary").asInt() + " acting=" + ints(ceph.get("acting")) + "/"
        + ceph.get("acting_primary").asInt();
  }

  private static List<Integer> ints(JsonNode a) {
    List<Integer> out = new ArrayList<>();
    a.forEach(n -> out.add(n.asInt()));
    return out;
  }

  /**
   * A {@code blob://} file of 16 full stripes and a partial one on the cluster's size-1 pool:
   * each block is one stripe with its exact offset and length, its host is the host CRUSH
   * puts that stripe's object on (checked against the monitor), the stripes spread over
   * several hosts, and listings carry the same locations without reading any record again.
   */
  @Test
  void blockLocationsOfAMultiStripeFileAreTheCrushHosts() throws IOException {
    int stripe = 64 << 10;
    String ns = "locations-" + ProcessHandle.current().pid();
    Configuration conf = CephTestCluster.hadoopConf(env, "loc", ns);
    conf.set("fs.blob.store.loc.stripe.size", String.valueOf(stripe));
    conf.setBoolean("fs.blob.impl.disable.cache", true);
    Path file = new Path("blob://loc/dir/data.bin");
    long length = 16L * stripe + 1234;
    try (FileSystem fs = file.getFileSystem(conf);
        RadosBlobStore store = open("blobfs", ns, "blobfs", env.clientKeyring())) {
      byte[] chunk = new byte[stripe];
      new Random(5).nextBytes(chunk);
      try (FSDataOutputStream out = fs.create(file, true)) {
        for (long written = 0; written < length; written += chunk.length) {
          out.write(chunk, 0, (int) Math.min(chunk.length, length - written));
        }
      }
      String fileId = null;
      for (String key : scan(store, "d/")) {
        fileId = key.substring(2, key.lastIndexOf('/'));
      }
      assertThat(fileId).as("data objects in namespace %s.d", ns).isNotNull();

      FileStatus status = fs.getFileStatus(file);
      BlockLocation[] blocks = fs.getFileBlockLocations(status, 0, length);
      assertThat(blocks).hasSize(17);
      Set<String> distinct = new LinkedHashSet<>();
      for (int s = 0; s < blocks.length; s++) {
        assertThat(blocks[s].getOffset()).isEqualTo((long) s * stripe);
        assertThat(blocks[s].getLength()).isEqualTo(Math.min(stripe, length - (long) s * stripe));
        JsonNode ceph = osdMap("blobfs", fileId + "/" + s, ns + ".d");
        String host = "host-" + (char) ('a' + ceph.get("up_primary").asInt());
        assertThat(blocks[s].getHosts()).as("stripe " + s).containsExactly(host);
        distinct.add(host);
      }
      assertThat(distinct.size()).as("hosts of the stripes " + distinct).isGreaterThan(1);

      // a range inside the file: the stripes it touches, each whole, covering it exactly
      long start = 2L * stripe + 100;
      long len = 3L * stripe;
      BlockLocation[] some = fs.getFileBlockLocations(status, start, len);
      assertThat(some).hasSize(4);
      assertThat(some[0].getOffset()).isLessThanOrEqualTo(start);
      assertThat(some[3].getOffset() + some[3].getLength()).isGreaterThanOrEqualTo(start + len);
      for (int i = 0; i < some.length; i++) {
        assertThat(some[i].getOffset()).isEqualTo(blocks[2 + i].getOffset());
        assertThat(some[i].getHosts()).isEqualTo(blocks[2 + i].getHosts());
      }

      // a located listing costs the store what a plain one does: locations come from the
      // records the listing reads anyway, and CRUSH runs here
      Map<String, Long> plainBefore = counters(fs);
      for (RemoteIterator<FileStatus> it = fs.listStatusIterator(new Path("blob://loc/dir"));
          it.hasNext(); ) {
        it.next();
      }
      Map<String, Long> plain = minus(counters(fs), plainBefore);
      Map<String, Long> before = counters(fs);
      List<LocatedFileStatus> listed = new ArrayList<>();
      for (RemoteIterator<LocatedFileStatus> it =
          fs.listLocatedStatus(new Path("blob://loc/dir")); it.hasNext(); ) {
        listed.add(it.next());
      }
      Map<String, Long> located = minus(counters(fs), before);
      for (RemoteIterator<LocatedFileStatus> it = fs.listFiles(new Path("blob://loc/"), true);
          it.hasNext(); ) {
        listed.add(it.next());
      }
      assertThat(listed).hasSize(2);
      for (LocatedFileStatus l : listed) {
        assertThat(l.getBlockLocations()).hasSize(17);
        for (int s = 0; s < 17; s++) {
          assertThat(l.getBlockLocations()[s].getHosts()).isEqualTo(blocks[s].getHosts());
          assertThat(l.getBlockLocations()[s].getOffset()).isEqualTo(blocks[s].getOffset());
          assertThat(l.getBlockLocations()[s].getLength()).isEqualTo(blocks[s].getLength());
        }
      }
      assertThat(located.get("store_stat")).isEqualTo(plain.get("store_stat"));
      assertThat(located.get("store_read")).isEqualTo(plain.get("store_read"));
      assertThat(located.get("store_scan")).isEqualTo(plain.get("store_scan"));
      assertThat(located.get("store_locate")).isEqualTo(17);
      fs.delete(new Path("blob://loc/dir"), true);
    }
  }

  private static Map<String, Long> counters(FileSystem fs) {
    Map<String, Long> m = new HashMap<>();
    for (String name : List.of("store_stat", "store_read", "store_scan", "store_locate")) {
      Long v = fs.getStorageStatistics().getLong(name);
      m.put(name, v == null ? 0L : v);
    }
    return m;
  }

  private static Map<String, Long> minus(Map<String, Long> a, Map<String, Long> b) {
    Map<String, Long> m = new HashMap<>();
    a.forEach((k, v) -> m.put(k, v - b.get(k)));
    return m;
  }

  private static List<String> scan(RadosBlobStore store, String prefix) throws IOException {
    List<String> keys = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage page = store.scan(prefix, cursor, 1000);
      keys.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return keys;
  }

  /** Names with ASCII, accents, CJK, Cyrillic and an emoji; lengths 1 to 60 bytes. */
  static List<String> names(int n) {
    Random rnd = new Random(7);
    String[] odd = {"é", "日本", "данные", "🚀", "ß", "中文"};
    List<String> names = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String base = "obj-" + Long.toHexString(rnd.nextLong()) + "/" + i;
      if (i % 3 == 0) {
        base = odd[i % odd.length] + base + odd[(i + 1) % odd.length];
      }
      names.add(base.substring(0, 1 + rnd.nextInt(base.length())));
    }
    return names;
  }

  private static List<Integer> upOf(String pool, int seed) throws IOException {
    JsonNode pg = JSON.readTree(ceph("pg", "map", poolId(pool) + "." + seed, "-f", "json"));
    return ints(pg.get("up"));
  }

  private static int poolId(String pool) throws IOException {
    return JSON.readTree(ceph("osd", "pool", "stats", pool, "-f", "json")).get(0)
        .get("pool_id").asInt();
  }

  /** Waits until {@code up} OSDs are up; restarts stopped OSD daemons if they do not come. */
  private static void waitForOsds(int up) throws IOException {
    try {
      waitForOsds(up, Duration.ofSeconds(30));
    } catch (IOException notYet) {
      if (up < 3) {
        throw notYet;
      }
      CephTestCluster.run("osd-start", "--layout", "multi", "--auth", "cephx", "--id", "2");
      waitForOsds(up, Duration.ofSeconds(60));
    }
  }

  private static void waitForOsds(int up, Duration patience) throws IOException {
    long deadline = System.nanoTime() + patience.toNanos();
    while (true) {
      JsonNode stat = JSON.readTree(ceph("osd", "stat", "-f", "json"));
      if (stat.get("num_up_osds").asInt() == up) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("OSDs up: " + stat + ", wanted " + up);
      }
      try {
        Thread.sleep(250);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException();
      }
    }
  }

  private static String ceph(String... args) throws IOException {
    return CephTestCluster.ceph(env, args);
  }

  private static RadosBlobStore open(String pool, String ns, String client, String keyring)
      throws IOException {
    Map<String, String> o = new HashMap<>();
    o.put("pool", pool);
    o.put("conf", env.conf());
    o.put("namespace", ns);
    o.put("client-id", client);
    o.put("keyring", keyring);
    o.put("op-timeout", "20s");
    o.put("connect-timeout", "20s");
    return (RadosBlobStore) new RadosBlobStoreProvider().open("t",
        new StoreOptions("fs.blob.store.t.", o));
  }
}
