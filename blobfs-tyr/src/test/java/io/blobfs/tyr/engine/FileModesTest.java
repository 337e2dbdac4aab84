package io.blobfs.tyr.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The data directory, log segments and checkpoints are the owner's alone, whatever the umask. */
class FileModesTest {
  @TempDir
  Path tmp;

  @Test
  void directoriesAre0700AndFiles0600() throws IOException {
    Path dir = tmp.resolve("a/data");
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir))) {
      TyrEngineTest.commit(e, new TxOp.Put("k", ByteBuffer.wrap(new byte[] {1}), false));
    } // closing writes a checkpoint
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir))) {
      TyrEngineTest.commit(e, new TxOp.Put("k2", ByteBuffer.wrap(new byte[] {2}), false));
    } // and reopening rolls to a new segment
    assertThat(mode(tmp.resolve("a"))).isEqualTo("rwx------");
    assertThat(mode(dir)).isEqualTo("rwx------");
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.toList();
    }
    assertThat(files).anyMatch(p -> p.toString().endsWith(".tyrckpt"));
    assertThat(files).anyMatch(p -> p.toString().endsWith(".tyrlog"));
    assertThat(files.size()).isGreaterThanOrEqualTo(3);
    for (Path f : files) {
      assertThat(mode(f)).as(f.toString()).isEqualTo(Files.isDirectory(f) ? "rwx------"
          : "rw-------");
    }
  }

  private static String mode(Path p) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
  }
}
