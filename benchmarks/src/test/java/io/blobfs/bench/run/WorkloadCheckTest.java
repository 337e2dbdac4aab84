package io.blobfs.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Output checks on hand-written outputs: each kind of wrong answer is caught. */
class WorkloadCheckTest {
  @TempDir
  Path dir;

  private Workload.Outcome outcome(Workload w, String name, List<List<String>> parts)
      throws Exception {
    Path out = dir.resolve(name);
    Files.createDirectories(out);
    for (int i = 0; i < parts.size(); i++) {
      Files.write(out.resolve(String.format("part-r-%05d", i)), parts.get(i),
          StandardCharsets.UTF_8);
    }
    Files.writeString(out.resolve("_SUCCESS"), "");
    FileSystem fs = FileSystem.getLocal(new Configuration());
    return w.read(fs, new org.apache.hadoop.fs.Path(out.toUri()));
  }

  @Test
  void sortNeedsTheSameLinesInOrder() throws Exception {
    Dataset.Expected e = new Dataset.Expected();
    e.lines = 4;
    var ref = outcome(Workload.SORT, "ref", List.of(List.of("a", "b"), List.of("c", "d")));
    assertThat(Workload.SORT.check(ref, ref, e)).isEqualTo(Workload.OK);
    // the same lines cut into other part files are still right
    var recut = outcome(Workload.SORT, "recut", List.of(List.of("a"), List.of("b", "c", "d")));
    assertThat(Workload.SORT.check(recut, ref, e)).isEqualTo(Workload.OK);
    var swapped = outcome(Workload.SORT, "swapped", List.of(List.of("c", "d"), List.of("a", "b")));
    assertThat(Workload.SORT.check(swapped, ref, e)).isEqualTo("out of order");
    var other = outcome(Workload.SORT, "other", List.of(List.of("a", "b"), List.of("c", "e")));
    assertThat(Workload.SORT.check(other, ref, e)).isEqualTo("not the reference's lines in its order");
  }

  @Test
  void grepNeedsTheSameMultisetAndTheExpectedCount() throws Exception {
    Dataset.Expected e = new Dataset.Expected();
    e.grepMatches = 3;
    var ref = outcome(Workload.GREP, "ref", List.of(List.of("x ceph", "y ceph", "z ceph")));
    var shuffled = outcome(Workload.GREP, "shuf", List.of(List.of("z ceph"), List.of("x ceph", "y ceph")));
    assertThat(Workload.GREP.check(shuffled, ref, e)).isEqualTo(Workload.OK);
    var changed = outcome(Workload.GREP, "changed", List.of(List.of("x ceph", "y ceph", "w ceph")));
    assertThat(Workload.GREP.check(changed, ref, e)).isEqualTo("not the reference's lines");
    var lost = outcome(Workload.GREP, "lost", List.of(List.of("x ceph", "y ceph")));
    assertThat(Workload.GREP.check(lost, ref, e)).startsWith("2 lines, expected 3");
  }

  @Test
  void connectedComponentsNeedsThePlantedNumberOfComponents() throws Exception {
    Dataset.Expected e = new Dataset.Expected();
    e.vertices = 4;
    e.components = 2;
    var ref = outcome(Workload.CONNECTED_COMPONENTS, "ref", List.of(List.of("1 1", "5 1", "2 2", "7 2")));
    assertThat(Workload.CONNECTED_COMPONENTS.check(ref, ref, e)).isEqualTo(Workload.OK);
    var merged = outcome(Workload.CONNECTED_COMPONENTS, "merged", List.of(List.of("1 1", "5 1", "2 1", "7 1")));
    assertThat(Workload.CONNECTED_COMPONENTS.check(merged, ref, e)).isEqualTo("1 components, 2 planted");
  }

  @Test
  void decisionTreeNeedsTheReferenceAccuracyWithinTolerance() throws Exception {
    Dataset.Expected e = new Dataset.Expected();
    e.testRows = 2;
    Workload.Outcome ref = decisionTree("ref", 0.93);
    assertThat(Workload.DECISION_TREE.check(decisionTree("close", 0.94), ref, e)).isEqualTo(Workload.OK);
    assertThat(Workload.DECISION_TREE.check(decisionTree("far", 0.88), ref, e))
        .isEqualTo("accuracy 0.8800, reference 0.9300");
    assertThat(Workload.DECISION_TREE.check(decisionTree("bad", 0.5), decisionTree("bad-ref", 0.5), e))
        .startsWith("accuracy 0.5000 < ");
    Files.delete(dir.resolve("far/metrics/part-r-00000"));
    assertThat(Workload.DECISION_TREE.read(FileSystem.getLocal(new Configuration()),
        new org.apache.hadoop.fs.Path(dir.resolve("far").toUri())).accuracy()).isNaN();
  }

  private Workload.Outcome decisionTree(String name, double accuracy) throws Exception {
    outcome(Workload.GREP, name + "/predictions", List.of(List.of("0,1,1", "5,0,1")));
    outcome(Workload.GREP, name + "/metrics",
        List.of(List.of("accuracy=" + accuracy + " test=2 train=8")));
    FileSystem fs = FileSystem.getLocal(new Configuration());
    return Workload.DECISION_TREE.read(fs, new org.apache.hadoop.fs.Path(dir.resolve(name).toUri()));
  }
}
