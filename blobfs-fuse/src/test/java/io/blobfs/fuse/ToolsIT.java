package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import io.blobfs.fuse.MountedStore.Backend;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Everyday programs nobody here wrote, on a real mount, each checked against the same
 * program on a local directory: cp -r, a tar round trip, sha256sum of dd-written files,
 * find, rsync. Over the in-memory store and over RADOS (a Ceph cluster of the run's own).
 */
class ToolsIT {
  @TempDir
  Path tmp;
  private Path mnt;
  private Path local;
  private MountedStore mount;

  private void mount(Backend backend) throws Exception {
    Mounts.assumeMountable("rsync", "sha256sum", "tar");
    mount = MountedStore.mount(backend, tmp, Map.of());
    mnt = mount.mnt();
    local = tmp.resolve("local");
    Files.createDirectories(local);
    // a tree of text and binary files of several sizes, some empty, three levels deep
    Mounts.sh(local, "mkdir -p src/a/b src/c src/empty-dir && cp -rL /etc/ssl src/c/ 2>/dev/null;"
        + " head -c 3000000 /dev/urandom > src/a/big.bin; : > src/a/b/empty;"
        + " for i in $(seq 1 40); do echo file $i > src/a/b/f$i.txt; done;"
        + " head -c 70000 /dev/urandom > 'src/name with spaces'");
  }

  @AfterEach
  void unmount() throws Exception {
    if (mount != null) {
      mount.close();
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void cpRecursiveCopiesEveryFileByteForByte(Backend backend) throws Exception {
    mount(backend);
    Mounts.sh(tmp, "cp -r local/src mnt/src && diff -r local/src mnt/src");
    assertEquals(Mounts.sh(local, "find src -type f | sort"), Mounts.sh(mnt, "find src -type f | sort"));
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void tarRoundTrip(Backend backend) throws Exception {
    mount(backend);
    Mounts.sh(tmp, "tar -C local -cf tree.tar src && tar -C mnt -xf tree.tar");
    Mounts.sh(tmp, "tar -C mnt -cf back.tar src && mkdir back && tar -C back -xf back.tar"
        + " && diff -r local/src back/src");
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void sha256OfDdWrittenFiles(Backend backend) throws Exception {
    mount(backend);
    // block sizes that are and are not multiples of FUSE's pages, and a seek past the end
    String cmd = "dd if=/dev/urandom of=DIR/a bs=1M count=20 status=none;"
        + " dd if=DIR/a of=DIR/b bs=4096 status=none;"
        + " dd if=DIR/a of=DIR/c bs=777 count=3000 status=none;"
        + " dd if=DIR/a of=DIR/d bs=64k count=3 seek=100 status=none";
    Mounts.sh(tmp, cmd.replace("DIR", "local"));
    Mounts.sh(tmp, "cp local/a mnt/a && " + cmd.replace("DIR", "mnt").replaceFirst("^[^;]*;", ""));
    String want = Mounts.sh(local, "sha256sum a b c d");
    String got = Mounts.sh(mnt, "sha256sum a b c d");
    assertEquals(want, got);
    assertEquals(Mounts.sh(local, "stat -c '%n %s' a b c d"), Mounts.sh(mnt, "stat -c '%n %s' a b c d"));
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void findListsWhatALocalFindLists(Backend backend) throws Exception {
    mount(backend);
    Mounts.sh(tmp, "cp -r local/src mnt/src");
    for (String expr : new String[] {"", "-type f", "-type d", "-name 'f1*'", "-size +100k"}) {
      assertEquals(Mounts.sh(local, "find src " + expr + " | sort"),
          Mounts.sh(mnt, "find src " + expr + " | sort"), "find " + expr);
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void rsyncCopiesThenSendsOnlyWhatChanged(Backend backend) throws Exception {
    mount(backend);
    // -rt, not -a: every file shows fs.blob.permission, so -a would see modes differ
    Mounts.sh(tmp, "rsync -rt local/src/ mnt/src/ && diff -r local/src mnt/src");
    // files keep the times rsync set, so its quick check (size and mtime) finds every
    // file unchanged but the one changed locally (directories keep no time of their own)
    // and an mtime of its own: an append in the same second as the first copy would leave
    // the whole-second time rsync compares unchanged, and its itemized line without the t
    Mounts.sh(local, "echo changed >> src/a/b/f7.txt && touch -d '2001-02-03 04:05:06' src/a/b/f7.txt");
    String out = Mounts.sh(tmp, "rsync -rt --itemize-changes local/src/ mnt/src/ | grep '^>f' || true");
    assertEquals(List.of(">f.st...... a/b/f7.txt"), Mounts.lines(out.strip()), out);
    Mounts.sh(tmp, "diff -r local/src mnt/src");
    assertEquals(Mounts.sh(local, "find src -type f -exec stat -c '%n %s %Y' {} + | sort"),
        Mounts.sh(mnt, "find src -type f -exec stat -c '%n %s %Y' {} + | sort"));
  }
}
