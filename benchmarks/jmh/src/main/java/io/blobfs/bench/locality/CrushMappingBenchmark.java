package io.blobfs.bench.locality;

import io.blobfs.locality.ceph.CephPlacement;
import io.blobfs.locality.crush.CrushMap;
import io.blobfs.locality.crush.OsdMap;
import io.blobfs.locality.crush.PlacementGroups;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Object name to up OSD set per second, on one thread, through the Java CRUSH: rjenkins
 * hash of the name, PG by stable mod, pps, straw2 chooseleaf over 3 racks x 2 hosts x 4
 * OSDs with uneven weights, then the OSD map's up set. Target: at least 1,000,000 per
 * second on one core.
 *
 * <p>Three figures: {@code objectToUpSet} is what a lookup costs (CRUSH runs once per PG and
 * the map keeps the answer, as Ceph's own clients do); {@code objectToRawOsdsUncached} runs
 * CRUSH for every object (the algorithm's own speed); {@code objectToHosts} adds the host
 * names BlobFS returns (namespace in the hash, host per OSD, primary first).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Threads(1)
@Fork(1)
public class CrushMappingBenchmark {
  private static final int HOST = 1;
  private static final int RACK = 3;
  private static final int ROOT = 10;

  private OsdMap map;
  private OsdMap.Pool pool;
  private CephPlacement.Snapshot snapshot;
  private String[] names;
  private int next;

  @Setup
  public void setUp() {
    Map<Integer, CrushMap.Bucket> buckets = new HashMap<>();
    int[] rackIds = new int[3];
    int[] rackWeights = new int[3];
    int osd = 0;
    for (int r = 0; r < 3; r++) {
      int[] hostIds = new int[2];
      int[] hostWeights = new int[2];
      for (int h = 0; h < 2; h++) {
        int[] items = new int[4];
        int[] weights = new int[4];
        for (int i = 0; i < 4; i++, osd++) {
          items[i] = osd;
          weights[i] = 0x10000 + (osd % 5) * 0x8000; // 1.0 to 3.0: uneven
          hostWeights[h] += weights[i];
        }
        hostIds[h] = -2 - (r * 2 + h);
        buckets.put(hostIds[h], new CrushMap.Bucket(hostIds[h], HOST, CrushMap.BucketAlg.STRAW2,
            0, items, weights));
        rackWeights[r] += hostWeights[h];
      }
      rackIds[r] = -8 - r;
      buckets.put(rackIds[r], new CrushMap.Bucket(rackIds[r], RACK, CrushMap.BucketAlg.STRAW2,
          0, hostIds, hostWeights));
    }
    buckets.put(-1, new CrushMap.Bucket(-1, ROOT, CrushMap.BucketAlg.STRAW2, 0, rackIds,
        rackWeights));
    CrushMap.Rule rule = new CrushMap.Rule(0, 1, List.of(
        new CrushMap.Step(CrushMap.Op.TAKE, -1, 0),
        new CrushMap.Step(CrushMap.Op.CHOOSELEAF_FIRSTN, 0, HOST),
        new CrushMap.Step(CrushMap.Op.EMIT, 0, 0)));
    CrushMap crush = new CrushMap(buckets, Map.of(0, rule), CrushMap.Tunables.jewel(), 24);
    Map<Integer, OsdMap.Osd> osds = new HashMap<>();
    for (int i = 0; i < 24; i++) {
      osds.put(i, new OsdMap.Osd(i, true, true, 0x10000, 1.0));
    }
    OsdMap.Pool pool = new OsdMap.Pool(1, "bench", OsdMap.TYPE_REPLICATED, 3, 0, 256, 256,
        true);
    map = new OsdMap(1, 24, Map.of(1, pool), osds, crush, OsdMap.Overrides.NONE);
    this.pool = pool;
    Map<Integer, String> hosts = new HashMap<>();
    for (int i = 0; i < 24; i++) {
      hosts.put(i, "host-" + i / 4);
    }
    snapshot = new CephPlacement.Snapshot(map, hosts, 0);
    Random rnd = new Random(1);
    List<String> n = new ArrayList<>();
    for (int i = 0; i < 4096; i++) {
      n.add(Long.toHexString(rnd.nextLong()) + "/" + i);
    }
    names = n.toArray(new String[0]);
    if (map.mapObject(1, names[0]).up().size() != 3) {
      throw new IllegalStateException("the benchmark map does not give 3 OSDs");
    }
  }

  @Benchmark
  public OsdMap.Placement objectToUpSet() {
    return map.mapObject(1, names[next++ & 4095]);
  }

  @Benchmark
  public List<Integer> objectToRawOsdsUncached() {
    return map.rawOsds(PlacementGroups.objectToPg(pool, names[next++ & 4095], null, null));
  }

  @Benchmark
  public List<String> objectToHosts() {
    return snapshot.hosts(map.mapObject(1, names[next++ & 4095], "d"));
  }
}
