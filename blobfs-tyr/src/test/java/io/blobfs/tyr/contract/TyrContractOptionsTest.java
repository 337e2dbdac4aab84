package io.blobfs.tyr.contract;

import io.blobfs.hadoop.SyncableTest;
import org.junit.jupiter.api.Test;

/** Týr's contract options, checked where the suites themselves (integration) are not run. */
class TyrContractOptionsTest {
  @Test
  void neitherModeDeclaresSync() {
    SyncableTest.assertSyncNotDeclared("contract/tyr.xml");
    SyncableTest.assertSyncNotDeclared("contract/tyr-paper.xml");
  }
}
