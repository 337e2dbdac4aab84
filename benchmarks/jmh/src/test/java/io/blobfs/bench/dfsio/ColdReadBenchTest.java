package io.blobfs.bench.dfsio;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ColdReadBenchTest {
  @Test
  void phasesAreTheFirstFilesOwnTheLaterFilesMediansAndTheSummedReads() {
    // fs, then open / first read / rest of three files
    double[] per = {500, 10, 100, 200, 4, 20, 70, 6, 30, 90};
    assertArrayEquals(new double[] {500, 10, 100, 200, 5, 25, 80, 100 + 200 + 20 + 70 + 30 + 90},
        ColdReadBench.phasesOf(per, 3), 1e-9);
  }

  @Test
  void aProbeLineOfTheWrongLengthIsRefused() {
    assertThrows(IllegalArgumentException.class,
        () -> ColdReadBench.phasesOf(new double[] {1, 2, 3, 4, 5}, 2));
    assertThrows(IllegalArgumentException.class,
        () -> ColdReadBench.phasesOf(new double[] {1}, 0));
  }

  @Test
  void aProbeReadsEveryByteOfEachFileAndPrintsOneFigurePerPhase(@TempDir Path dir)
      throws Exception {
    Files.write(dir.resolve("f0"), new byte[2_500_000]);
    Files.write(dir.resolve("f1"), new byte[1_000_001]);
    PrintStream out = System.out;
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    System.setOut(new PrintStream(got, true, StandardCharsets.UTF_8));
    try {
      ColdReadBench.probe(new String[] {"--probe", "file://" + dir, "2"});
    } finally {
      System.setOut(out);
    }
    String line = got.toString(StandardCharsets.UTF_8).trim();
    assertTrue(line.startsWith("PROBE "), line);
    double[] per = Arrays.stream(line.substring(6).trim().split(" "))
        .mapToDouble(Double::parseDouble).toArray();
    assertEquals(1 + 3 * 2, per.length, line);
    assertTrue(Arrays.stream(per).allMatch(x -> x >= 0), line);
  }
}
