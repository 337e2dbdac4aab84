package io.blobfs.tyr.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A participant's prepare in the engine: validated like a commit, keys held until the decision. */
class PreparedKeysTest {
  @TempDir
  Path dir;

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String text(TyrEngine e, String key) throws Exception {
    ByteBuffer b = ByteBuffer.allocate((int) e.stat(key).size());
    e.read(key, 0, b);
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  private static ErrorCode codeOf(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    return ((TyrException) c).code();
  }

  @Test
  void prepareValidatesLikeACommitAndLogsNothing() throws Exception {
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir))) {
      e.commit(TxRequest.of(new TxOp.Put("a", utf8("1"), false))).join();
      long before = e.lastCommit();
      long disk = e.diskBytes();
      // An exclusive create of an existing blob, a stale read, a CAS on another value.
      assertThatThrownBy(() -> e.prepare("t1", TxRequest.of(new TxOp.Create("a"))))
          .satisfies(t -> assertEquals(ErrorCode.EXISTS, codeOf(t)));
      assertThatThrownBy(() -> e.prepare("t2", new TxRequest(List.of(new ReadCheck("a", 99)),
          List.of(new TxOp.Put("b", utf8("x"), false)))))
          .satisfies(t -> assertEquals(ErrorCode.CONFLICT, codeOf(t)));
      assertThatThrownBy(() -> e.prepare("t3", TxRequest.of(new TxOp.Delete("zz", true))))
          .satisfies(t -> assertEquals(ErrorCode.NOT_FOUND, codeOf(t)));
      // A valid one: nothing visible, nothing logged, no number used.
      Map<String, Long> versions = e.prepare("t4", new TxRequest(
          List.of(new ReadCheck("a", before)), List.of(new TxOp.Put("a", utf8("2"), false),
          new TxOp.Put("c", utf8("3"), true))));
      assertThat(versions).containsExactly(Map.entry("a", before), Map.entry("c", 0L));
      assertEquals("1", text(e, "a"));
      assertThat(e.stat("c").exists()).isFalse();
      assertEquals(before, e.lastCommit());
      assertEquals(disk, e.diskBytes());
      // Failed prepares reserved nothing: "b" is free.
      e.commit(TxRequest.of(new TxOp.Put("b", utf8("free"), false))).join();
    }
  }

  @Test
  void reservedKeysRefuseOtherCommitsUntilTheDecision() throws Exception {
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir))) {
      e.commit(TxRequest.of(new TxOp.Put("a", utf8("1"), false))).join();
      TxRequest part = new TxRequest(List.of(new ReadCheck("r", 0)),
          List.of(new TxOp.Put("a", utf8("2"), false)));
      e.prepare("t1", part);
      // A write, a read check, another prepare of the same keys: all retryable conflicts.
      for (TxRequest other : List.of(TxRequest.of(new TxOp.Put("a", utf8("x"), false)),
          new TxRequest(List.of(new ReadCheck("a", 1)), List.of(new TxOp.Put("q", utf8("q"),
              false))),
          TxRequest.of(new TxOp.Put("r", utf8("x"), false)))) {
        assertThatThrownBy(() -> e.commit(other).join())
            .satisfies(t -> assertEquals(ErrorCode.CONFLICT, codeOf(t)));
      }
      assertThatThrownBy(() -> e.prepare("t2", TxRequest.of(new TxOp.Put("a", utf8("y"),
          false)))).satisfies(t -> assertEquals(ErrorCode.CONFLICT, codeOf(t)));
      assertThat(e.stat("q").exists()).isFalse();
      // Other keys commit as usual.
      e.commit(TxRequest.of(new TxOp.Put("other", utf8("o"), false))).join();
      // The decision applies the part once; then the keys are free.
      e.commitPrepared("t1", part).join();
      assertEquals("2", text(e, "a"));
      assertThatThrownBy(() -> e.commitPrepared("t1", part).join())
          .satisfies(t -> assertEquals(ErrorCode.BAD_REQUEST, codeOf(t)));
      e.commit(TxRequest.of(new TxOp.Put("a", utf8("3"), false))).join();
      assertEquals("3", text(e, "a"));
    }
  }

  @Test
  void anAbortedPartFreesItsKeysAndChangesNothing() throws Exception {
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir))) {
      e.commit(TxRequest.of(new TxOp.Put("a", utf8("1"), false))).join();
      e.prepare("t1", TxRequest.of(new TxOp.Delete("a", true)));
      e.releasePrepared("t1");
      assertEquals("1", text(e, "a"));
      e.commit(TxRequest.of(new TxOp.Put("a", utf8("2"), false))).join();
      assertEquals("2", text(e, "a"));
    }
  }

  /**
   * Issue 13, bug 3 (the rebase): a prepared part's commit reports, per key, the parts held
   * behind it (all of them, in order), read in the hold that logs it; a commit's hook sees
   * its own write in versionsOf (both sync policies), before the future completes, and
   * also runs for a commit that changes nothing.
   */
  @Test
  void aPartsCommitReportsTheHoldersBehindItAndTheHookSeesTheWrite() throws Exception {
    for (SyncPolicy policy : List.of(SyncPolicy.NONE, SyncPolicy.ALWAYS)) {
      try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir.resolve(policy.name()))
          .withSyncPolicy(policy))) {
        TxRequest x = TxRequest.of(new TxOp.Put("k", utf8("x"), false),
            new TxOp.Put("j", utf8("x"), false));
        TxRequest y = TxRequest.of(new TxOp.Append("k", utf8("y")));
        TxRequest z = TxRequest.of(new TxOp.Put("k", utf8("z"), false));
        e.reservePrepared("X", x);
        e.reservePrepared("Y", y);
        e.reservePrepared("Z", z);
        Map<String, List<String>> behind = new java.util.HashMap<>();
        Map<String, Long> seen = new java.util.HashMap<>();
        java.util.concurrent.atomic.AtomicBoolean hookDone =
            new java.util.concurrent.atomic.AtomicBoolean();
        e.commitPrepared("X", x, behind).join();
        assertThat(behind).isEqualTo(Map.of("k", List.of("Y", "Z")));
        java.util.concurrent.CompletableFuture<io.blobfs.tyr.api.CommitResult> yDone =
            e.commitPrepared("Y", y, null);
        long yVersion = yDone.join().version();
        behind.clear();
        var zDone = e.commitPrepared("Z", z, behind);
        zDone.join();
        assertThat(behind).as("nothing behind Z").isEmpty();
        assertThat(e.versionsOf(y).get("k")).isGreaterThan(yVersion);
        // A plain commit with a hook: the hook reads the write's own version.
        java.util.concurrent.CompletableFuture<io.blobfs.tyr.api.CommitResult>[] w =
            new java.util.concurrent.CompletableFuture[1];
        w[0] = e.commit(TxRequest.of(new TxOp.Put("k", utf8("w"), false)), () -> {
          seen.putAll(e.versionsOf(y));
          // Slow on purpose: a hook run after (or beside) the future's completion would
          // still be sleeping when join() returns, and hookDone still false there.
          try {
            Thread.sleep(100);
          } catch (InterruptedException err) {
            Thread.currentThread().interrupt();
          }
          hookDone.set(true);
        });
        long wVersion = w[0].join().version();
        assertThat(hookDone.get()).as("hook ended before the future completed").isTrue();
        assertThat(seen).isEqualTo(Map.of("k", wVersion));
        seen.clear();
        e.commit(TxRequest.of(new TxOp.Delete("absent", false)), () -> seen.put("ran", 1L))
            .join();
        assertThat(seen).as("hook of a commit that changes nothing").containsKey("ran");
        assertThat(e.underCommitLock(() -> text0(e, "k"))).isEqualTo("w");
      }
    }
  }

  private static String text0(TyrEngine e, String key) {
    try {
      return text(e, key);
    } catch (Exception err) {
      throw new IllegalStateException(err);
    }
  }
}
