package io.blobfs.locality.crush;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.locality.crush.PlacementGroups.PgId;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proof: a synthetic 24-OSD / 6-host / 3-rack straw2 map built with Ceph's own tools
 * (with pg_upmap_items entries that osdmaptool's balancer writes into it), and every placement
 * we compute compared with what crushtool and osdmaptool compute.
 */
class CephAgreementIT {
  private static final int OUT_OSD = 5;
  private static final int POOL = 1;
  /** The in-memory map changes every osdmaptool comparison runs with. */
  private static final List<String> MARK =
      List.of("--mark-up-in", "--mark-out", String.valueOf(OUT_OSD));

  @TempDir
  static Path dir;
  static CrushMap crush;
  static OsdMap osdMap;

  @BeforeAll
  static void buildMaps() throws Exception {
    CephTools.require();
    Files.writeString(dir.resolve("crush.txt"), crushText());
    CephTools.run(List.of("crushtool", "-c", "crush.txt", "-o", "crush.bin"), dir, 60);
    // pg_num 192 (not a power of two), pgp_num 96 < pg_num
    CephTools.run(List.of("osdmaptool", "--createsimple", "24", "--with-default-pool",
        "--pg-bits", "3", "--pgp-bits", "2", "--clobber", "osdmap"), dir, 60);
    CephTools.run(List.of("osdmaptool", "osdmap", "--import-crush", "crush.bin"), dir, 60);
    // Ceph's own balancer, offline: pg_upmap_items entries written into the map
    CephTools.run(List.of("osdmaptool", "osdmap", "--mark-up-in", "--mark-out",
        String.valueOf(OUT_OSD), "--upmap", "upmap.txt", "--upmap-pool", "rbd",
        "--upmap-deviation", "1", "--upmap-max", "40", "--save"), dir, 120);
    String crushJson = CephTools.run(List.of("crushtool", "-i", "crush.bin", "--dump"), dir, 60);
    String osdJson = CephTools.run(List.of("osdmaptool", "osdmap", "--mark-up-in",
        "--mark-out", String.valueOf(OUT_OSD), "--dump", "json"), dir, 60);
    crush = MapJsonParser.parseCrush(crushJson);
    // osdmaptool prints "marking ..." progress lines on stdout before the JSON
    osdMap = MapJsonParser.parseOsdMap(osdJson.substring(osdJson.indexOf('{')), crush);
  }

  /** Uneven weights; rule 0 replicated chooseleaf host, 1 rack-then-host, 2 indep (EC-like). */
  static String crushText() {
    StringBuilder sb = new StringBuilder();
    for (String t : List.of("choose_local_tries 0", "choose_local_fallback_tries 0",
        "choose_total_tries 50", "chooseleaf_descend_once 1", "chooseleaf_vary_r 1",
        "chooseleaf_stable 1", "straw_calc_version 1", "allowed_bucket_algs 54")) {
      sb.append("tunable ").append(t).append('\n');
    }
    for (int i = 0; i < 24; i++) {
      sb.append("device ").append(i).append(" osd.").append(i).append('\n');
    }
    sb.append("type 0 osd\ntype 1 host\ntype 2 rack\ntype 3 root\n");
    double[] hostWeight = new double[6];
    for (int h = 0; h < 6; h++) {
      sb.append("host host").append(h).append(" {\n\tid ").append(-5 - h)
          .append("\n\talg straw2\n\thash 0\n");
      for (int j = 0; j < 4; j++) {
        int osd = h * 4 + j;
        double w = 0.25 + ((osd * 7) % 11) * 0.3125; // 0.25 .. 3.375, uneven
        hostWeight[h] += w;
        sb.append("\titem osd.").append(osd).append(" weight ").append(w).append('\n');
      }
      sb.append("}\n");
    }
    for (int r = 0; r < 3; r++) {
      sb.append("rack rack").append(r).append(" {\n\tid ").append(-2 - r)
          .append("\n\talg straw2\n\thash 0\n");
      for (int h = r * 2; h < r * 2 + 2; h++) {
        sb.append("\titem host").append(h).append(" weight ").append(hostWeight[h]).append('\n');
      }
      sb.append("}\n");
    }
    sb.append("root default {\n\tid -1\n\talg straw2\n\thash 0\n");
    for (int r = 0; r < 3; r++) {
      sb.append("\titem rack").append(r).append(" weight ")
          .append(hostWeight[2 * r] + hostWeight[2 * r + 1]).append('\n');
    }
    sb.append("}\n");
    sb.append("rule replicated_host {\n\tid 0\n\ttype replicated\n\tmin_size 1\n\tmax_size 10\n"
        + "\tstep take default\n\tstep chooseleaf firstn 0 type host\n\tstep emit\n}\n");
    sb.append("rule rack_then_host {\n\tid 1\n\ttype replicated\n\tmin_size 1\n\tmax_size 10\n"
        + "\tstep take default\n\tstep choose firstn 3 type rack\n"
        + "\tstep chooseleaf firstn 1 type host\n\tstep emit\n}\n");
    sb.append("rule indep_host {\n\tid 2\n\ttype erasure\n\tmin_size 1\n\tmax_size 10\n"
        + "\tstep set_chooseleaf_tries 5\n\tstep set_choose_tries 100\n"
        + "\tstep take default\n\tstep chooseleaf indep 0 type host\n\tstep emit\n}\n");
    return sb.toString();
  }

  private static final Pattern CRUSH_LINE =
      Pattern.compile("CRUSH rule (\\d+) x (\\d+) \\[([^\\]]*)\\]");

  /** crushtool --test over 10,000 inputs per rule, with one device out and one half-weighted. */
  @Test
  void crushRulesAgreeWithCrushtool() throws Exception {
    int[] weights = new int[24];
    Arrays.fill(weights, 0x10000);
    weights[OUT_OSD] = 0;
    weights[11] = 0x8000;
    CrushMapper mapper = new CrushMapper(crush);
    int total = 0;
    for (int[] ruleRep : new int[][] {{0, 3}, {1, 3}, {2, 4}}) {
      String out = CephTools.run(List.of("crushtool", "-i", "crush.bin", "--test",
          "--show-mappings", "--rule", String.valueOf(ruleRep[0]), "--num-rep",
          String.valueOf(ruleRep[1]), "--min-x", "0", "--max-x", "9999",
          "--weight", String.valueOf(OUT_OSD), "0", "--weight", "11", "0.5"), dir, 120);
      int lines = 0;
      int agree = 0;
      List<String> mismatches = new ArrayList<>();
      for (String line : out.split("\n")) {
        Matcher m = CRUSH_LINE.matcher(line);
        if (!m.find()) {
          continue;
        }
        lines++;
        int x = Integer.parseInt(m.group(2));
        String expected = m.group(3).replace(" ", "");
        String actual = Arrays.stream(mapper.doRule(ruleRep[0], x, ruleRep[1], weights))
            .mapToObj(String::valueOf).collect(Collectors.joining(","));
        if (expected.equals(actual)) {
          agree++;
        } else if (mismatches.size() < 5) {
          mismatches.add("x=" + x + " ceph=[" + expected + "] ours=[" + actual + "]");
        }
      }
      System.out.printf("rule %d: %d/%d CRUSH mappings agree%n", ruleRep[0], agree, lines);
      assertThat(lines).isEqualTo(10_000);
      assertThat(mismatches).as("rule " + ruleRep[0]).isEmpty();
      total += agree;
    }
    assertThat(total).isEqualTo(30_000);
  }

  /**
   * Every PG of the pool: up set and primary, acting set and primary, against osdmaptool
   * --test-map-pgs-dump-all.
   */
  @Test
  void everyPgAgreesWithOsdmaptool() throws Exception {
    Map<String, String> ref = referencePgMappings();
    OsdMap.Pool pool = osdMap.pool(POOL);
    assertThat(pool.pgNum()).isEqualTo(192);
    assertThat(pool.pgpNum()).isEqualTo(96);
    assertThat(ref).hasSize(pool.pgNum());
    int agree = 0;
    List<String> mismatches = new ArrayList<>();
    for (int seed = 0; seed < pool.pgNum(); seed++) {
      PgId pg = new PgId(POOL, seed);
      OsdMap.Placement p = osdMap.up(pg);
      String ours = CephTools.render(p);
      if (ours.equals(ref.get(pg.toString()))) {
        agree++;
      } else if (mismatches.size() < 5) {
        mismatches.add(pg + " ceph=" + ref.get(pg.toString()) + " ours=" + ours);
      }
      assertThat(p.up()).doesNotContain(OUT_OSD);
    }
    System.out.printf("pgs: %d/%d PG mappings agree%n", agree, pool.pgNum());
    assertThat(mismatches).isEmpty();
    // the upmaps took effect: some PGs are not where CRUSH alone puts them
    int moved = 0;
    for (PgId pg : osdMap.overrides().pgUpmapItems().keySet()) {
      if (!osdMap.up(pg).up().equals(osdMap.rawOsds(pg).stream()
          .filter(o -> osdMap.osds().get(o).up()).toList())) {
        moved++;
      }
    }
    System.out.printf("pgs: %d pg_upmap_items entries, %d PGs moved by them%n",
        osdMap.overrides().pgUpmapItems().size(), moved);
    assertThat(moved).isPositive();
  }

  /**
   * 10,000 object names (a fifth non-ASCII): PG and up set via our hash + mapping, compared
   * with osdmaptool's PG table; a sample (all non-ASCII names among them) is also checked one
   * by one against osdmaptool --test-map-object.
   */
  @Test
  void objectNamesAgreeWithOsdmaptool() throws Exception {
    Map<String, String> ref = referencePgMappings();
    List<String> names = objectNames(10_000);
    int agree = 0;
    Map<String, String> ourPg = new HashMap<>();
    for (String name : names) {
      OsdMap.Placement p = osdMap.mapObject(POOL, name);
      ourPg.put(name, p.pg().toString());
      if (CephTools.render(p).equals(ref.get(p.pg().toString()))) {
        agree++;
      }
    }
    System.out.printf("objects: %d/%d object->OSD mappings agree with the PG table%n",
        agree, names.size());
    assertThat(agree).isEqualTo(names.size());

    int sampled = 0;
    int sampleAgree = 0;
    List<String> mismatches = new ArrayList<>();
    for (int i = 0; i < names.size(); i += 25) {
      String name = names.get(i);
      CephTools.ObjectMapping ceph = CephTools.mapObject(dir.resolve("osdmap"), name, POOL,
          MARK);
      sampled++;
      OsdMap.Placement ours = osdMap.mapObject(POOL, name);
      if (ceph.pgid().equals(ours.pg().toString()) && ceph.acting().equals(ours.acting())) {
        sampleAgree++;
      } else if (mismatches.size() < 5) {
        mismatches.add(name + " ceph=" + ceph + " ours=" + ours);
      }
    }
    System.out.printf("objects: %d/%d sampled names agree with --test-map-object%n",
        sampleAgree, sampled);
    assertThat(mismatches).isEmpty();
  }

  /** pgid -> osdmaptool --test-map-pgs-dump-all's line, rendered. */
  private static Map<String, String> referencePgMappings() throws Exception {
    Map<String, String> ref = new HashMap<>();
    CephTools.mapPgs(dir.resolve("osdmap"), POOL, MARK)
        .forEach((pg, m) -> ref.put(pg, m.render()));
    return ref;
  }

  static List<String> objectNames(int n) {
    Random rnd = new Random(42);
    String[] unicode = {"é", "ü", "ß", "日本", "данные", "🚀", "ñ", "中文", "Ω", "ç"};
    List<String> names = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String base = "blob-" + Long.toHexString(rnd.nextLong()) + "/part." + i;
      if (i % 5 == 0) {
        base = unicode[i / 5 % unicode.length] + base + unicode[(i / 5 + 3) % unicode.length];
      }
      names.add(base.substring(0, Math.max(1, rnd.nextInt(base.length()) + 1)));
    }
    return names;
  }
}
