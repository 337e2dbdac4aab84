package io.blobfs.namespace;

import java.util.List;

/** A byte range of a file and the hosts that store it, primary first. */
public record BlockInfo(long offset, long length, List<String> hosts) {
  public BlockInfo {
    hosts = List.copyOf(hosts);
  }
}
