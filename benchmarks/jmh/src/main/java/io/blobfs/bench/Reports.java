package io.blobfs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;

/** What every benchmark report shares: rates, verdicts, and writing the files. */
public final class Reports {
  private Reports() {}

  public static double mibPerSec(long bytes, long nanos) {
    return bytes / (double) (1 << 20) / (nanos / 1e9);
  }

  public static String verdict(double ratio, double target) {
    return ratio >= target ? "met" : "MISSED";
  }

  /** Prints the Markdown and writes {@code NAME.md} and {@code NAME.png} into {@code dir}. */
  public static void write(Path dir, String name, CharSequence markdown, CategoryChart chart)
      throws IOException {
    System.out.println();
    System.out.println(markdown);
    Files.createDirectories(dir);
    Files.writeString(dir.resolve(name + ".md"), markdown);
    BitmapEncoder.saveBitmap(chart, dir.resolve(name).toString(),
        BitmapEncoder.BitmapFormat.PNG);
  }
}
