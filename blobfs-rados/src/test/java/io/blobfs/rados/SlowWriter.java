package io.blobfs.rados;

import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A writer process for the kill test: writes a file through blob:// on RADOS forever,
 * printing "WROTE n" after each MiB, until it is killed. Args: the Hadoop settings as
 * key=value pairs, then the blob:// URI of the file.
 */
public final class SlowWriter {
  private SlowWriter() {}

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    for (int i = 0; i < args.length - 1; i++) {
      int eq = args[i].indexOf('=');
      conf.set(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    URI file = URI.create(args[args.length - 1]);
    FileSystem fs = FileSystem.newInstance(file, conf);
    byte[] mib = new byte[1 << 20];
    try (FSDataOutputStream out = fs.create(new Path(file), true)) {
      for (long n = 1; ; n++) {
        out.write(mib);
        System.out.println("WROTE " + n);
        System.out.flush();
        Thread.sleep(20);
      }
    }
  }
}
