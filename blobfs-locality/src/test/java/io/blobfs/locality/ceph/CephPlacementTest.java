package io.blobfs.locality.ceph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.locality.crush.CrushMapException;
import io.blobfs.locality.crush.UnknownPoolException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The map cache and its bad inputs, with a scripted monitor: a map that does not parse, a
 * pool the map does not have, an epoch that moves while the maps are read. Each must end in
 * a typed error or a fresh map, never in an answer from a stale or mixed one.
 */
class CephPlacementTest {
  /** Three OSDs, one per host bucket; rule 0 puts a replica on each host. */
  static final String CRUSH = """
      {"devices":[{"id":0,"name":"osd.0"},{"id":1,"name":"osd.1"},{"id":2,"name":"osd.2"}],
       "types":[{"type_id":0,"name":"osd"},{"type_id":1,"name":"host"},{"type_id":2,"name":"root"}],
       "buckets":[
        {"id":-1,"name":"default","type_id":2,"type_name":"root","alg":"straw2","hash":"rjenkins1",
         "items":[{"id":-2,"weight":65536},{"id":-3,"weight":65536},{"id":-4,"weight":65536}]},
        {"id":-2,"name":"alpha","type_id":1,"type_name":"host","alg":"straw2","hash":"rjenkins1",
         "items":[{"id":0,"weight":65536}]},
        {"id":-3,"name":"beta","type_id":1,"type_name":"host","alg":"straw2","hash":"rjenkins1",
         "items":[{"id":1,"weight":65536}]},
        {"id":-4,"name":"gamma","type_id":1,"type_name":"host","alg":"straw2","hash":"rjenkins1",
         "items":[{"id":2,"weight":65536}]}],
       "rules":[{"rule_id":0,"type":1,"steps":[{"op":"take","item":-1},
         {"op":"chooseleaf_firstn","num":0,"type":"host"},{"op":"emit"}]}],
       "tunables":{"choose_local_tries":0,"choose_local_fallback_tries":0,
         "choose_total_tries":50,"chooseleaf_descend_once":1,"chooseleaf_vary_r":1,
         "chooseleaf_stable":1},
       "choose_args":{}}
      """;

  static String osdDump(int epoch, String... poolNames) {
    StringBuilder pools = new StringBuilder();
    for (int i = 0; i < poolNames.length; i++) {
      pools.append(i == 0 ? "" : ",").append("{\"pool\":").append(i + 1)
          .append(",\"pool_name\":\"").append(poolNames[i]).append("\",\"type\":1,\"size\":3,")
          .append("\"crush_rule\":0,\"pg_num\":8,\"pg_placement_num\":8,\"flags\":1,")
          .append("\"object_hash\":2}");
    }
    return "{\"epoch\":" + epoch + ",\"max_osd\":3,\"pools\":[" + pools + "],\"osds\":["
        + "{\"osd\":0,\"up\":1,\"in\":1,\"weight\":1,\"primary_affinity\":1,"
        + "\"public_addr\":\"10.0.0.1:6800/1\"},"
        + "{\"osd\":1,\"up\":1,\"in\":1,\"weight\":1,\"primary_affinity\":1,"
        + "\"public_addr\":\"10.0.0.2:6800/1\"},"
        + "{\"osd\":2,\"up\":1,\"in\":1,\"weight\":1,\"primary_affinity\":1,"
        + "\"public_addr\":\"10.0.0.3:6800/1\"}],"
        + "\"pg_upmap\":[],\"pg_upmap_items\":[],\"pg_temp\":[],\"primary_temp\":[]}";
  }

  /** A monitor whose replies the test scripts; it records the commands it was sent. */
  static final class ScriptedMonitor implements MonitorCommands {
    final List<String> sent = new ArrayList<>();
    /** Epochs answered by successive osd stat calls (the last one repeats). */
    final List<Integer> statEpochs = new ArrayList<>(List.of(1));
    /** Epochs of successive osd dumps (the last one repeats). */
    final List<Integer> dumpEpochs = new ArrayList<>(List.of(1));
    String[] pools = {"data"};
    String crush = CRUSH;
    String osdOverride;
    int stats;
    int dumps;

    @Override
    public String command(String json) throws IOException {
      sent.add(json);
      if (json.equals(CephPlacement.OSD_STAT)) {
        int e = statEpochs.get(Math.min(stats++, statEpochs.size() - 1));
        return "{\"epoch\":" + e + ",\"num_osds\":3}";
      }
      if (json.equals(CephPlacement.CRUSH_DUMP)) {
        return crush;
      }
      if (json.equals(CephPlacement.OSD_DUMP)) {
        int e = dumpEpochs.get(Math.min(dumps++, dumpEpochs.size() - 1));
        return osdOverride != null ? osdOverride : osdDump(e, pools);
      }
      throw new IOException("unexpected command " + json);
    }

    long count(String command) {
      return sent.stream().filter(command::equals).count();
    }
  }

  @Test
  void hostsComeFromTheHostBucketsPrimaryFirstEachOnce() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    CephPlacement placement = new CephPlacement(mon, Duration.ofMinutes(1));
    for (int i = 0; i < 50; i++) {
      List<String> hosts = placement.hostsOf("data", "ns", "object-" + i);
      assertThat(hosts).hasSize(3).containsExactlyInAnyOrder("alpha", "beta", "gamma");
      int primary = placement.placementOf("data", "ns", "object-" + i).upPrimary();
      assertThat(hosts.get(0)).isEqualTo(List.of("alpha", "beta", "gamma").get(primary));
    }
    // one load (stat, crush, osd dump) served all 100 lookups
    assertThat(mon.sent).hasSize(3);
  }

  @Test
  void anOsdOutsideAnyHostBucketIsNamedByItsAddress() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    mon.crush = CRUSH.replace("\"type_name\":\"host\"", "\"type_name\":\"chassis\"");
    List<String> hosts = new CephPlacement(mon, Duration.ZERO).hostsOf("data", "", "x");
    assertThat(hosts).containsExactlyInAnyOrder("10.0.0.1", "10.0.0.2", "10.0.0.3");
  }

  @Test
  void aMapThatDoesNotParseIsATypedErrorAndIsNotKept() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    mon.osdOverride = "{\"epoch\":1,\"max_osd\":3,\"pools\":[{\"pool\":1";
    CephPlacement placement = new CephPlacement(mon, Duration.ofMinutes(1));
    assertThatThrownBy(() -> placement.hostsOf("data", "", "x"))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("malformed JSON");
    mon.osdOverride = "{\"epoch\":1,\"max_osd\":3,\"pools\":[],\"osds\":[{\"osd\":7}]}";
    assertThatThrownBy(() -> placement.hostsOf("data", "", "x"))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("weight");
    mon.crush = "{\"devices\":[]}";
    mon.osdOverride = null;
    assertThatThrownBy(() -> placement.hostsOf("data", "", "x"))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("types");
    mon.crush = CRUSH;
    assertThat(placement.hostsOf("data", "", "x")).hasSize(3);
  }

  @Test
  void anEpochReplyWithoutAnEpochIsATypedError() {
    MonitorCommands mon = json -> json.equals(CephPlacement.OSD_STAT) ? "{\"num_osds\":3}" : "";
    assertThatThrownBy(() -> new CephPlacement(mon, Duration.ZERO).hostsOf("data", "", "x"))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("no epoch");
    MonitorCommands garbage = json -> "<html>";
    assertThatThrownBy(() -> new CephPlacement(garbage, Duration.ZERO).hostsOf("d", "", "x"))
        .isInstanceOf(CrushMapException.class).hasMessageContaining("malformed");
  }

  @Test
  void anUnknownPoolIsLookedForInAFreshMapThenRefused() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    CephPlacement placement = new CephPlacement(mon, Duration.ofMinutes(1));
    placement.hostsOf("data", "", "x");
    int before = mon.sent.size();
    assertThatThrownBy(() -> placement.hostsOf("nope", "", "x"))
        .isInstanceOf(UnknownPoolException.class).hasMessageContaining("'nope'")
        .hasMessageContaining("epoch 1");
    // the refusal came after asking the monitor, not from the cached copy alone
    assertThat(mon.sent.subList(before, mon.sent.size())).contains(CephPlacement.OSD_STAT);
  }

  @Test
  void aPoolCreatedAfterTheMapWasReadIsFoundByARefresh() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    CephPlacement placement = new CephPlacement(mon, Duration.ofMinutes(1));
    placement.hostsOf("data", "", "x");
    mon.pools = new String[] {"data", "later"};
    mon.statEpochs.add(2);
    mon.dumpEpochs.add(2);
    assertThat(placement.hostsOf("later", "", "x")).hasSize(3);
    assertThat(placement.current().epoch()).isEqualTo(2);
  }

  @Test
  void anEpochThatMovesWhileTheMapsAreReadMeansReadingThemAgain() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    // stat says 1, the osd dump is already 2; then stat 2 and dump 2 agree
    mon.statEpochs.clear();
    mon.statEpochs.addAll(List.of(1, 2));
    mon.dumpEpochs.clear();
    mon.dumpEpochs.addAll(List.of(2, 2));
    CephPlacement placement = new CephPlacement(mon, Duration.ofMinutes(1));
    assertThat(placement.hostsOf("data", "", "x")).hasSize(3);
    assertThat(placement.current().epoch()).isEqualTo(2);
    assertThat(mon.count(CephPlacement.CRUSH_DUMP)).isEqualTo(2);
  }

  @Test
  void anEpochThatNeverSettlesIsATypedError() {
    ScriptedMonitor mon = new ScriptedMonitor();
    mon.statEpochs.clear();
    mon.dumpEpochs.clear();
    for (int e = 1; e < 40; e += 2) {
      mon.statEpochs.add(e);
      mon.dumpEpochs.add(e + 1);
    }
    CephPlacement placement = new CephPlacement(mon, Duration.ofMinutes(1));
    assertThatThrownBy(() -> placement.hostsOf("data", "", "x"))
        .isInstanceOf(MapChangedException.class).hasMessageContaining("moved");
    assertThat(mon.count(CephPlacement.CRUSH_DUMP)).isEqualTo(CephPlacement.LOAD_ATTEMPTS);
  }

  @Test
  void theEpochIsCheckedOncePerTtlAndTheMapsReadAgainOnlyWhenItMoved() throws IOException {
    ScriptedMonitor mon = new ScriptedMonitor();
    AtomicLong now = new AtomicLong();
    CephPlacement placement = new CephPlacement(mon, Duration.ofSeconds(10), now::get);
    placement.hostsOf("data", "", "x");
    now.addAndGet(Duration.ofSeconds(9).toNanos());
    placement.hostsOf("data", "", "y");
    assertThat(mon.count(CephPlacement.OSD_STAT)).isEqualTo(1);

    now.addAndGet(Duration.ofSeconds(2).toNanos());
    placement.hostsOf("data", "", "z");
    assertThat(mon.count(CephPlacement.OSD_STAT)).isEqualTo(2);
    assertThat(mon.count(CephPlacement.OSD_DUMP)).isEqualTo(1);

    mon.statEpochs.add(5);
    mon.dumpEpochs.add(5);
    now.addAndGet(Duration.ofSeconds(11).toNanos());
    placement.hostsOf("data", "", "z");
    assertThat(mon.count(CephPlacement.OSD_DUMP)).isEqualTo(2);
    assertThat(placement.current().epoch()).isEqualTo(5);
  }

  @Test
  void aFailingMonitorIsAnIOExceptionAndNothingIsCached() throws IOException {
    ScriptedMonitor ok = new ScriptedMonitor();
    boolean[] down = {true};
    CephPlacement placement = new CephPlacement(json -> {
      if (down[0]) {
        throw new IOException("no monitor answers");
      }
      return ok.command(json);
    }, Duration.ofMinutes(1));
    assertThatThrownBy(() -> placement.hostsOf("data", "", "x"))
        .isInstanceOf(IOException.class).hasMessageContaining("no monitor");
    down[0] = false;
    assertThat(placement.hostsOf("data", "", "x")).hasSize(3);
  }
}
