package io.blobfs.bench.workloads;

/** What every workload's {@code main} shares: checking its positional arguments. */
final class Apps {
  private Apps() {}

  static void requireArgs(String[] args, int min, int max, String usage) {
    if (args.length < min || args.length > max) {
      throw new IllegalArgumentException("usage: " + usage + " (got " + args.length
          + " arguments)");
    }
  }
}
