package io.blobfs.bench.workloads;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.workloads.TextDataGenerator.Spec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class GeneratorsTest {
  private static final Spec SPEC = new Spec(200_000, 3, 7);

  @Test
  void graphHasExactlyItsPlantedComponentsAndEveryVertex() {
    GraphDataGenerator g = new GraphDataGenerator(SPEC);
    Map<Long, Long> parent = new HashMap<>();
    for (int i = 0; i < SPEC.files(); i++) {
      g.lines(i).forEachRemaining(line -> {
        String[] e = line.split(" ");
        union(parent, Long.parseLong(e[0]), Long.parseLong(e[1]));
      });
    }
    Set<Long> roots = new HashSet<>();
    parent.keySet().forEach(v -> roots.add(find(parent, v)));
    assertThat(parent).hasSize(g.vertices());
    assertThat(roots).hasSize(g.components());
    assertThat(g.components()).isBetween(g.vertices() / 31, g.vertices() / 2);
  }

  @Test
  void sameSpecSameBytesOtherSeedOtherBytes() {
    List<String> a = new ArrayList<>();
    List<String> b = new ArrayList<>();
    FeatureDataGenerator.lines(SPEC, 1).forEachRemaining(a::add);
    FeatureDataGenerator.lines(SPEC, 1).forEachRemaining(b::add);
    assertThat(a).isEqualTo(b);
    List<String> c = new ArrayList<>();
    FeatureDataGenerator.lines(new Spec(200_000, 3, 8), 1).forEachRemaining(c::add);
    assertThat(c).isNotEqualTo(a);
  }

  @Test
  void featureRowsHaveUniqueIdsAndMostlyFollowTheRule() {
    Set<Long> ids = new HashSet<>();
    int rows = 0;
    int agree = 0;
    for (int i = 0; i < SPEC.files(); i++) {
      for (var it = FeatureDataGenerator.lines(SPEC, i); it.hasNext(); ) {
        String[] f = it.next().split(",");
        assertThat(f).hasSize(2 + FeatureDataGenerator.FEATURES);
        assertThat(ids.add(Long.parseLong(f[0]))).as("id %s unique", f[0]).isTrue();
        int[] x = new int[FeatureDataGenerator.FEATURES];
        for (int k = 0; k < x.length; k++) {
          x[k] = Integer.parseInt(f[k + 2]);
        }
        rows++;
        agree += FeatureDataGenerator.label(x) == Integer.parseInt(f[1]) ? 1 : 0;
      }
    }
    assertThat((double) agree / rows).isBetween(0.93, 0.97); // 5% label noise
  }

  @Test
  void bigramsOfALine() {
    assertThat(Tokenizer.bigrams("a bb  c")).containsExactly("a bb", "bb c");
    assertThat(Tokenizer.bigrams("single")).isEmpty();
    assertThat(Tokenizer.bigrams("")).isEmpty();
  }

  private static void union(Map<Long, Long> parent, long a, long b) {
    parent.putIfAbsent(a, a);
    parent.putIfAbsent(b, b);
    parent.put(find(parent, a), find(parent, b));
  }

  private static long find(Map<Long, Long> parent, long v) {
    long r = v;
    while (parent.get(r) != r) {
      r = parent.get(r);
    }
    return r;
  }
}
