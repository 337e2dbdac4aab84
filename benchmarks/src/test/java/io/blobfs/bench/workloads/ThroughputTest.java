package io.blobfs.bench.workloads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The throughput job's tasks without Spark: what one writes, the other reads and checks. */
class ThroughputTest {
  @TempDir
  Path dir;

  private final Throughput.HadoopConf conf = new Throughput.HadoopConf(new Configuration());

  @Test
  void writesTheSizeAndReadsItBack() throws IOException {
    long size = 2L * Throughput.BUFFER + 12_345; // a partial last write
    String d = dir.toUri().toString();
    assertThat(Throughput.write(conf, d, 3, size)).isEqualTo(size);
    assertThat(Files.size(dir.resolve("file-3"))).isEqualTo(size);
    assertThat(Throughput.read(conf, d, 3, size)).isEqualTo(size);
    // files differ by seed
    Throughput.write(conf, d, 4, size);
    assertThat(Files.readAllBytes(dir.resolve("file-4")))
        .isNotEqualTo(Files.readAllBytes(dir.resolve("file-3")));
  }

  @Test
  void aWrongByteOrAShortFileFailsTheRead() throws IOException {
    long size = Throughput.BUFFER + 10;
    String d = dir.toUri().toString();
    Throughput.write(conf, d, 0, size);
    try (RandomAccessFile f = new RandomAccessFile(dir.resolve("file-0").toFile(), "rw")) {
      f.seek(Throughput.BUFFER + 5);
      int b = f.read();
      f.seek(Throughput.BUFFER + 5);
      f.write(b ^ 1);
    }
    Files.deleteIfExists(dir.resolve(".file-0.crc")); // file://'s checksum would catch it first
    assertThatThrownBy(() -> Throughput.read(conf, d, 0, size))
        .isInstanceOf(IOException.class).hasMessageContaining("wrong bytes");

    Throughput.write(conf, d, 1, size);
    assertThatThrownBy(() -> Throughput.read(conf, d, 1, size + 1))
        .isInstanceOf(IOException.class).hasMessageContaining("read " + size + " bytes");
  }
}
