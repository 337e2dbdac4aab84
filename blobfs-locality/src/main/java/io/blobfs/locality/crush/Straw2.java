package io.blobfs.locality.crush;

import io.blobfs.locality.crush.CrushMap.Bucket;

/**
 * straw2 bucket choice: every item draws {@code ln(hash & 0xffff) / weight} and the longest
 * straw (the largest, i.e. least negative, draw) wins; zero-weight items never win unless all
 * weights are zero (then the first item, as in Ceph).
 */
final class Straw2 {
  private Straw2() {}

  static int choose(Bucket bucket, int x, int r) {
    int[] items = bucket.items();
    int[] weights = bucket.weights();
    int high = 0;
    long highDraw = 0;
    for (int i = 0; i < items.length; i++) {
      long draw;
      long w = weights[i] & 0xffffffffL;
      if (w != 0) {
        int u = RJenkins.hash3(x, items[i], r) & 0xffff;
        long ln = CrushLn.ln(u) - 0x1000000000000L;
        draw = ln / w;
      } else {
        draw = Long.MIN_VALUE;
      }
      if (i == 0 || draw > highDraw) {
        high = i;
        highDraw = draw;
      }
    }
    return items[high];
  }
}
