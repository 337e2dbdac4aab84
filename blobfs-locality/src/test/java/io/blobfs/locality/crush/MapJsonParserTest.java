package io.blobfs.locality.crush;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class MapJsonParserTest {
  static final String CRUSH = """
      {"devices":[{"id":0,"name":"osd.0"},{"id":1,"name":"osd.1"},{"id":2,"name":"osd.2"}],
       "types":[{"type_id":0,"name":"osd"},{"type_id":1,"name":"host"},{"type_id":2,"name":"root"}],
       "buckets":[
        {"id":-1,"type_id":2,"alg":"ALG","hash":"rjenkins1","items":[
          {"id":-2,"weight":65536},{"id":-3,"weight":65536},{"id":-4,"weight":65536}]},
        {"id":-2,"type_id":1,"alg":"straw2","hash":"rjenkins1","items":[{"id":0,"weight":65536}]},
        {"id":-3,"type_id":1,"alg":"straw2","hash":"rjenkins1","items":[{"id":1,"weight":65536}]},
        {"id":-4,"type_id":1,"alg":"straw2","hash":"rjenkins1","items":[{"id":2,"weight":65536}]}],
       "rules":[{"rule_id":0,"type":1,"steps":[{"op":"take","item":-1},
         {"op":"chooseleaf_firstn","num":0,"type":"host"},{"op":"emit"}]}],
       "tunables":{"choose_local_tries":0,"choose_local_fallback_tries":0,
         "choose_total_tries":50,"chooseleaf_descend_once":1,"chooseleaf_vary_r":1,
         "chooseleaf_stable":1},
       "choose_args":{}}
      """;

  static final String OSDS = """
      {"max_osd":3,
       "pools":[{"pool":1,"pool_name":"p","type":1,"size":3,"crush_rule":0,"pg_num":8,
                 "pg_placement_num":8,"flags":1}],
       "osds":[{"osd":0,"up":1,"in":1,"weight":1,"primary_affinity":1},
               {"osd":1,"up":0,"in":1,"weight":1,"primary_affinity":1},
               {"osd":2,"up":1,"in":1,"weight":1,"primary_affinity":1}],
       "pg_upmap":[],"pg_upmap_items":[{"pgid":"1.3","mappings":[]}],"pg_temp":[]}
      """;

  @Test
  void malformedJsonIsATypedError() {
    assertThatThrownBy(() -> MapJsonParser.parseCrush("{\"devices\": [")).isInstanceOf(
        CrushMapException.class).hasMessageContaining("malformed JSON");
    assertThatThrownBy(() -> MapJsonParser.parseCrush("[]"))
        .isInstanceOf(CrushMapException.class);
    assertThatThrownBy(() -> MapJsonParser.parseCrush("{\"devices\":[]}"))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("types");
  }

  @Test
  void unknownOrUnimplementedBucketAlgIsRefused() {
    assertThatThrownBy(() -> MapJsonParser.parseCrush(CRUSH.replace("ALG", "straw3")))
        .isInstanceOf(UnsupportedMapFeatureException.class).hasMessageContaining("straw3");
    assertThatThrownBy(() -> MapJsonParser.parseCrush(CRUSH.replace("ALG", "straw")))
        .isInstanceOf(UnsupportedMapFeatureException.class).hasMessageContaining("straw2");
  }

  @Test
  void downOsdsLeaveTheUpSet() {
    CrushMap crush = MapJsonParser.parseCrush(CRUSH.replace("ALG", "straw2"));
    OsdMap map = MapJsonParser.parseOsdMap(OSDS, crush);
    for (int seed = 0; seed < 8; seed++) {
      PlacementGroups.PgId pg = new PlacementGroups.PgId(1, seed);
      assertThat(map.rawOsds(pg)).hasSize(3);
      OsdMap.Placement p = map.up(pg);
      assertThat(p.up()).hasSize(2).doesNotContain(1);
      assertThat(p.primary()).isEqualTo(p.up().get(0));
      assertThat(p.acting()).isEqualTo(p.up());
    }
  }

  /** Pacific dumps primary_temp as a flat array: "pgid", osd, "pgid", osd... */
  @Test
  void tempEntriesSetTheActingSetInBothDumpShapes() {
    CrushMap crush = MapJsonParser.parseCrush(CRUSH.replace("ALG", "straw2"));
    String temps = OSDS.replace("\"pg_temp\":[]", "\"pg_temp\":[{\"pgid\":\"1.2\",\"osds\":[2,1,0]}],"
        + "\"primary_temp\":[\"1.4\",2]");
    OsdMap map = MapJsonParser.parseOsdMap(temps, crush);
    OsdMap.Placement p2 = map.up(new PlacementGroups.PgId(1, 2));
    assertThat(p2.acting()).containsExactly(2, 0); // osd.1 is down
    assertThat(p2.actingPrimary()).isEqualTo(2);
    OsdMap.Placement p4 = map.up(new PlacementGroups.PgId(1, 4));
    assertThat(p4.acting()).isEqualTo(p4.up());
    assertThat(p4.actingPrimary()).isEqualTo(2);
    String objects = temps.replace("[\"1.4\",2]", "[{\"pgid\":\"1.4\",\"osd\":2}]");
    assertThat(MapJsonParser.parseOsdMap(objects, crush).up(new PlacementGroups.PgId(1, 4))
        .actingPrimary()).isEqualTo(2);
    assertThatThrownBy(() -> MapJsonParser.parseOsdMap(
        temps.replace("[\"1.4\",2]", "[\"1.4\"]"), crush))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("primary_temp");
  }

  @Test
  void stableModAndMask() {
    assertThat(PlacementGroups.mask(192)).isEqualTo(255);
    assertThat(PlacementGroups.mask(96)).isEqualTo(127);
    assertThat(PlacementGroups.mask(1)).isEqualTo(0);
    assertThat(PlacementGroups.stableMod(0xff, 192, 255)).isEqualTo(0x7f);
    assertThat(PlacementGroups.stableMod(0xbf, 192, 255)).isEqualTo(0xbf);
    assertThat(PlacementGroups.PgId.parse("1.9c")).isEqualTo(new PlacementGroups.PgId(1, 0x9c));
  }
}
