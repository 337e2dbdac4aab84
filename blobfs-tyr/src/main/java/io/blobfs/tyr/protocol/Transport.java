package io.blobfs.tyr.protocol;

import io.netty.channel.Channel;
import io.netty.channel.ServerChannel;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * Where a node listens and a client connects: TCP, or, for a host named
 * {@code jvm:NAME}, Netty's in-JVM transport. A node embedded in a job then has no port
 * at all, so no other local user can reach it, whatever secret it has or lacks. Both run
 * on the same NIO event loops, so nothing else in the pipeline differs.
 */
public final class Transport {
  public static final String IN_JVM = "jvm:";

  private Transport() {}

  public static boolean inJvm(String host) {
    return host.startsWith(IN_JVM);
  }

  /**
   * How long an event loop group that carried this transport's channels should stay quiet
   * before it stops. An in-JVM channel's close ends with a task on its peer's event loop
   * (Netty's {@code LocalChannel.doClose}), and the peer answers with one on ours: a group
   * that stops at once rejects it, and Netty logs a RejectedExecutionException at every
   * exit of a job on an embedded node. TCP needs no such wait.
   */
  public static long shutdownQuietMillis(String host) {
    return inJvm(host) ? 100 : 0;
  }

  public static SocketAddress address(String host, int port) {
    return inJvm(host) ? new LocalAddress(host.substring(IN_JVM.length()))
        : new InetSocketAddress(host, port);
  }

  public static Class<? extends ServerChannel> serverChannel(String host) {
    return inJvm(host) ? LocalServerChannel.class : NioServerSocketChannel.class;
  }

  public static Class<? extends Channel> channel(String host) {
    return inJvm(host) ? LocalChannel.class : NioSocketChannel.class;
  }
}
