package io.blobfs.bench.hpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HpcReportTest {
  @TempDir
  Path tmp;

  private static final List<String> RAW = List.of(
      "# load-before\t1.0 2.0 3.0",
      "# mpi-not-run\tmpiio.c absent",
      "1\ttyr\tseq-read\t300", "1\tcephfs\tseq-read\t100", "1\tlocal\tseq-read\t500",
      "2\ttyr\tseq-read\t100", "2\tcephfs\tseq-read\t200", "2\tlocal\tseq-read\t400",
      "3\ttyr\tseq-read\t200", "3\tcephfs\tseq-read\t150", "3\tlocal\tseq-read\t300",
      "1\ttyr\trand-write\t90", "1\tcephfs\trand-write\t30", "1\tlocal\trand-write\t900");

  @Test
  void ratiosAreOfMediansAcrossRounds() {
    HpcReport r = HpcReport.parse(RAW);
    assertThat(HpcReport.median(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
    assertThat(HpcReport.median(List.of(4.0, 1.0, 2.0, 3.0))).isEqualTo(2.5);
    assertThat(r.ratio("seq-read", "tyr", "cephfs")).isEqualTo(200.0 / 150.0);
    assertThat(r.ratio("seq-read", "tyr", "local")).isEqualTo(0.5);
    assertThat(r.ratio("seq-read", "rados", "cephfs")).isNaN();
  }

  @Test
  void reportStatesEachTargetMetOrMissedAndWritesCharts() throws Exception {
    HpcReport r = HpcReport.parse(RAW);
    String md = r.markdown("t");
    assertThat(md).contains("| seq-read ≥ 1.5× cephfs | tyr | 1.33 | **missed** |")
        .contains("| seq-read ≥ 0.7× local | tyr | 0.50 | **missed** |")
        .contains("| rand-write ≥ 3.0× cephfs | tyr | 3.00 | met |")
        .contains("| seq-write ≥ 1.0× cephfs | tyr | - | not measured |")
        .contains("MPI-IO: not run (mpiio.c absent)")
        .contains("Load average before: 1.0 2.0 3.0");
    r.charts(tmp, "t");
    assertThat(Files.size(tmp.resolve("t-throughput.png"))).isGreaterThan(1000);
    assertThat(Files.size(tmp.resolve("t-ratio.png"))).isGreaterThan(1000);
  }

  /** bench-hpc.sh --base: another build's mount, labelled and measured beside this one's. */
  @Test
  void aBaseBuildsMountGetsItsLabelRatiosAndTargets() {
    List<String> raw = new java.util.ArrayList<>(RAW);
    raw.add("1\ttyr-base\trand-write\t60");
    String md = HpcReport.parse(raw).markdown("t");
    assertThat(md).contains("mount over a Týr server, base build (MB/s per round; median)")
        .contains("| rand-write | tyr-base | 2.00 | 0.07 |")
        .contains("| rand-write ≥ 3.0× cephfs | tyr-base | 2.00 | **missed** |");
  }

  /** bench-hpc.sh tyr-pt: this build's mount with passthrough, beside the one without. */
  @Test
  void aPassthroughMountGetsItsLabelRatiosAndTargets() {
    List<String> raw = new java.util.ArrayList<>(RAW);
    raw.add("1\ttyr-pt\trand-write\t150");
    String md = HpcReport.parse(raw).markdown("t");
    assertThat(md).contains("mount over a Týr server, passthrough (MB/s per round; median)")
        .contains("| rand-write | tyr-pt | 5.00 | 0.17 |")
        .contains("| rand-write ≥ 3.0× cephfs | tyr-pt | 5.00 | met |");
  }
}
