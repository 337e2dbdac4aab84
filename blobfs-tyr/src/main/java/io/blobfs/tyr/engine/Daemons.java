package io.blobfs.tyr.engine;

/** The engine's background threads: daemons, named after the store's directory. */
final class Daemons {
  private Daemons() {}

  static Thread create(String role, EngineConfig config, Runnable body) {
    Thread t = new Thread(body, "tyr-" + role + "-" + config.directory().getFileName());
    t.setDaemon(true);
    return t;
  }

  /**
   * Wakes {@code t} (if there is one) where it waits on {@code monitor}, and waits for it to
   * end, however often this thread is interrupted (the interrupt is kept): the engine
   * closes its log only once its threads are done with it.
   */
  static void stop(Thread t, Object monitor) {
    if (t == null) {
      return;
    }
    synchronized (monitor) {
      monitor.notifyAll();
    }
    joinFully(t);
  }

  private static void joinFully(Thread t) {
    boolean interrupted = false;
    while (t.isAlive()) {
      try {
        t.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
