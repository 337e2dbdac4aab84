package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.netty.util.internal.logging.AbstractInternalLogger;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An embedded node and its clients close in either order (a job's shutdown hooks race)
 * without Netty logging the in-JVM channel's last close task as rejected: users saw a
 * RejectedExecutionException stack trace at the end of every job on the embedded store.
 */
class InJvmShutdownTest {
  @TempDir Path dir;
  private final List<String> warnings = new CopyOnWriteArrayList<>();
  private InternalLoggerFactory before;

  @BeforeEach
  void captureNettyWarnings() {
    before = InternalLoggerFactory.getDefaultFactory();
    InternalLoggerFactory.setDefaultFactory(new InternalLoggerFactory() {
      @Override
      protected InternalLogger newInstance(String name) {
        return new Capturing(name, warnings);
      }
    });
  }

  @AfterEach
  void restore() {
    InternalLoggerFactory.setDefaultFactory(before);
  }

  @Test
  void theNodeClosingFirstLogsNoRejectedTask() throws Exception {
    for (int i = 0; i < 10; i++) {
      TyrServer server = TyrServer.start(ServerConfig.inJvm(EngineConfig.defaults(dir)));
      TyrClient client = connected(server);
      server.close();
      client.close();
    }
    assertThat(warnings).isEmpty();
  }

  @Test
  void theClientClosingFirstLogsNoRejectedTask() throws Exception {
    for (int i = 0; i < 10; i++) {
      TyrServer server = TyrServer.start(ServerConfig.inJvm(EngineConfig.defaults(dir)));
      TyrClient client = connected(server);
      client.close();
      server.close();
    }
    assertThat(warnings).isEmpty();
  }

  private static TyrClient connected(TyrServer server) throws Exception {
    TyrClient client = new TyrClient(
        ClientConfig.of(server.config().bind(), 0).withConnections(2));
    for (int k = 0; k < 4; k++) { // every connection of the client opened
      assertThat(TyrClient.await(client.stat("k" + k)).exists()).isFalse();
    }
    return client;
  }

  /** Keeps what Netty warns or errs about (with the exception's class), drops the rest. */
  private static final class Capturing extends AbstractInternalLogger {
    private final List<String> sink;

    Capturing(String name, List<String> sink) {
      super(name);
      this.sink = sink;
    }

    private void keep(String msg, Throwable t) {
      sink.add(name() + ": " + msg + (t == null ? "" : " " + t));
    }

    @Override public boolean isTraceEnabled() { return false; }
    @Override public void trace(String msg) {}
    @Override public void trace(String format, Object arg) {}
    @Override public void trace(String format, Object a, Object b) {}
    @Override public void trace(String format, Object... args) {}
    @Override public void trace(String msg, Throwable t) {}
    @Override public boolean isDebugEnabled() { return false; }
    @Override public void debug(String msg) {}
    @Override public void debug(String format, Object arg) {}
    @Override public void debug(String format, Object a, Object b) {}
    @Override public void debug(String format, Object... args) {}
    @Override public void debug(String msg, Throwable t) {}
    @Override public boolean isInfoEnabled() { return false; }
    @Override public void info(String msg) {}
    @Override public void info(String format, Object arg) {}
    @Override public void info(String format, Object a, Object b) {}
    @Override public void info(String format, Object... args) {}
    @Override public void info(String msg, Throwable t) {}
    @Override public boolean isWarnEnabled() { return true; }
    @Override public void warn(String msg) { keep(msg, null); }
    @Override public void warn(String format, Object arg) { keep(format, last(arg)); }
    @Override public void warn(String format, Object a, Object b) { keep(format, last(b)); }
    @Override public void warn(String format, Object... args) {
      keep(format, args.length == 0 ? null : last(args[args.length - 1]));
    }
    @Override public void warn(String msg, Throwable t) { keep(msg, t); }
    @Override public boolean isErrorEnabled() { return true; }
    @Override public void error(String msg) { keep(msg, null); }
    @Override public void error(String format, Object arg) { keep(format, last(arg)); }
    @Override public void error(String format, Object a, Object b) { keep(format, last(b)); }
    @Override public void error(String format, Object... args) {
      keep(format, args.length == 0 ? null : last(args[args.length - 1]));
    }
    @Override public void error(String msg, Throwable t) { keep(msg, t); }

    private static Throwable last(Object o) {
      return o instanceof Throwable t ? t : null;
    }
  }
}
