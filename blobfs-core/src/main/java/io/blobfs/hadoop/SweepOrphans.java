package io.blobfs.hadoop;

import io.blobfs.namespace.OrphanSweeper;
import java.net.URI;
import java.time.Duration;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * The orphan sweeper as a command:
 * {@code hadoop jar blobfs-bundle.jar io.blobfs.hadoop.SweepOrphans [-dry-run]
 * [-min-age 1h] [-finish-renames] blob://STORE/}. Prints what it found; exit code 0 on
 * success. {@code -finish-renames} first finishes what a crash cut off part-way
 * ({@link io.blobfs.namespace.BlobNamespace#finishInterruptedRenames}): directory renames
 * and, without transactions (RADOS), file renames whose lock has expired and recursive
 * deletes.
 */
public final class SweepOrphans extends Configured implements Tool {
  public static void main(String[] args) throws Exception {
    System.exit(ToolRunner.run(new Configuration(), new SweepOrphans(), args));
  }

  @Override
  public int run(String[] args) throws Exception {
    boolean dryRun = false;
    boolean finishRenames = false;
    Duration minAge = Duration.ofHours(1);
    URI store = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-dry-run", "--dry-run" -> dryRun = true;
        case "-finish-renames", "--finish-renames" -> finishRenames = true;
        case "-min-age", "--min-age" -> {
          if (++i == args.length) {
            return usage("-min-age needs a value");
          }
          minAge = new io.blobfs.store.StoreOptions("", java.util.Map.of("a", args[i]))
              .getDuration("a", minAge);
        }
        default -> {
          if (store != null || !args[i].startsWith("blob://")) {
            return usage("unexpected argument " + args[i]);
          }
          store = URI.create(args[i]);
        }
      }
    }
    if (store == null) {
      return usage("no blob://STORE/ given");
    }
    if (finishRenames && dryRun) {
      return usage("-finish-renames moves names, so it does not go with -dry-run");
    }
    try (FileSystem fs = FileSystem.newInstance(store, getConf())) {
      if (!(fs instanceof BlobFileSystem blob)) {
        return usage(store + " is not a BlobFS file system (fs.blob.impl unset?)");
      }
      if (finishRenames) {
        for (String done : blob.namespace().finishInterruptedRenames()) {
          System.out.println("finished " + done);
        }
      }
      OrphanSweeper.Report r = new OrphanSweeper(blob.namespace()).sweep(minAge, dryRun);
      System.out.printf("data blobs %d, file ids %d, referenced %d, orphaned file ids %d "
              + "(%d blobs, %d bytes), deleted %d, left to writers %d, renamed during the"
              + " sweep %d, adopted (never swept) %d, cleanup-due blobs deleted %d,"
              + " spent adoptions removed %d, wills of cut deletes carried out %d%s%n",
          r.dataBlobs(), r.fileIds(),
          r.referencedFileIds(), r.orphanFileIds().size(), r.orphanBlobs(), r.orphanBytes(),
          r.deletedBlobs(), r.heldByWriters(), r.stillNamed(), r.adopted(),
          r.dueBlobsDeleted(), r.adoptedLocksRemoved(), r.willsCarriedOut(),
          dryRun ? " (dry run: candidates only)" : "");
      for (String id : r.orphanFileIds()) {
        System.out.println("orphan " + id);
      }
      return 0;
    }
  }

  private static int usage(String why) {
    System.err.println("SweepOrphans: " + why);
    System.err.println("usage: SweepOrphans [-dry-run] [-min-age 1h] [-finish-renames]"
        + " blob://STORE/");
    return 2;
  }
}
