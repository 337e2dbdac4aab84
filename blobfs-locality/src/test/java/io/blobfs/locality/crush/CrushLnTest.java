package io.blobfs.locality.crush;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CrushLnTest {
  /** RH is computed; these are entries of Ceph's published __RH_LH_tbl (even indexes). */
  @Test
  void computedReciprocalsMatchReferenceEntries() {
    assertThat(CrushLn.RH[0]).isEqualTo(0x0001000000000000L);
    assertThat(CrushLn.RH[1]).isEqualTo(0x0000fe03f80fe040L);
    assertThat(CrushLn.RH[2]).isEqualTo(0x0000fc0fc0fc0fc1L);
    assertThat(CrushLn.RH[3]).isEqualTo(0x0000fa232cf25214L);
    assertThat(CrushLn.RH[64]).isEqualTo(0x0000aaaaaaaaaaabL);
    assertThat(CrushLn.RH[127]).isEqualTo(0x0000808080808081L);
    assertThat(CrushLn.RH[128]).isEqualTo(0x0000800000000000L);
  }

  /** LH follows 2^48 log2(1 + k/128) (truncated) except the last entry, which Ceph caps. */
  @Test
  void logTableFollowsItsDefinition() {
    assertThat(CrushLn.LH).hasSize(129);
    for (int k = 0; k < 128; k++) {
      double exact = Math.scalb(Math.log1p(k / 128.0) / Math.log(2), 48);
      assertThat((double) CrushLn.LH[k]).as("LH[%d]", k).isCloseTo(exact,
          org.assertj.core.data.Offset.offset(1.0));
    }
    assertThat(CrushLn.LH[128]).isEqualTo(0xffff00000000L);
    assertThat(CrushLn.LL).hasSize(256);
  }

  /** ln(u) ~ 2^44 log2(u + 1): 0 at u = 0, just under 2^48 at u = 0xffff. */
  @Test
  void lnEndpointsAndScale() {
    assertThat(CrushLn.ln(0)).isEqualTo(0L);
    assertThat(CrushLn.ln(0xffff)).isEqualTo(0xfffff0000000L);
    for (int u : new int[] {1, 100, 4095, 30000, 65000}) {
      double exact = Math.scalb(Math.log1p(u) / Math.log(2), 44);
      assertThat((double) CrushLn.ln(u)).as("ln(%d)", u)
          .isCloseTo(exact, org.assertj.core.data.Percentage.withPercentage(0.01));
    }
  }
}
