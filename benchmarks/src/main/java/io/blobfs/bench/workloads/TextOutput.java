package io.blobfs.bench.workloads;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.spark.api.java.JavaRDD;
import scala.Tuple2;

/** Writes an RDD of lines as text part files through the job's output committer. */
public final class TextOutput {
  private TextOutput() {}

  /**
   * Saves {@code lines} under {@code output} (which must not exist) with the new Hadoop API,
   * so that the chosen {@link Committer} commits the job: one {@code part-r-NNNNN} file per
   * partition, in partition order, and a {@code _SUCCESS} marker.
   */
  public static void save(JavaRDD<String> lines, String output, Committer committer,
      Configuration base) {
    Configuration conf = new Configuration(base);
    committer.configure(conf, new Path(output));
    save(lines, output, conf);
  }

  /**
   * As above, with whatever committer {@code conf} selects: what a spark-submitted
   * application does, where the user picks the committer with {@code --conf
   * spark.hadoop.mapreduce.outputcommitter.factory.scheme.SCHEME=...}.
   */
  public static void save(JavaRDD<String> lines, String output, Configuration conf) {
    lines.mapToPair(TextOutput::record)
        .saveAsNewAPIHadoopFile(output, NullWritable.class, Text.class,
            TextOutputFormat.class, conf);
  }

  private static Tuple2<NullWritable, Text> record(String line) {
    return new Tuple2<>(NullWritable.get(), new Text(line));
  }
}
