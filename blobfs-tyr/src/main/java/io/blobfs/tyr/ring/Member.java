package io.blobfs.tyr.ring;

import java.util.Objects;

/**
 * One node of a Týr cluster, named by the address clients reach it at. Its {@link #id()}
 * is what the ring hashes, so every client and node must spell a member the same way:
 * they do, since clients take the members from the nodes' ring, never from their own list.
 */
public record Member(String host, int port) {
  public Member {
    Objects.requireNonNull(host, "host");
    if (host.isBlank() || host.contains(",") || host.contains("=")) {
      throw new IllegalArgumentException("bad member host '" + host + "'");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("member port " + port + " is not within 1..65535");
    }
  }

  /** {@code host:port} (an IPv6 host in brackets is kept as written). */
  public static Member parse(String address) {
    String a = address.strip();
    int colon = a.lastIndexOf(':');
    if (colon <= 0 || colon == a.length() - 1) {
      throw new IllegalArgumentException("member '" + address + "' is not host:port");
    }
    try {
      return new Member(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1)));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("member '" + address + "' has no numeric port");
    }
  }

  /** A comma-separated list of {@code host:port}, in the order given. */
  public static java.util.List<Member> parseList(String list) {
    java.util.List<Member> members = new java.util.ArrayList<>();
    for (String part : list.split(",")) {
      if (!part.isBlank()) {
        members.add(parse(part));
      }
    }
    return members;
  }

  public String id() {
    return host + ":" + port;
  }

  @Override
  public String toString() {
    return id();
  }
}
