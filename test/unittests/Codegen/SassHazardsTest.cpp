//===- SassHazardsTest.cpp - the reconvergence-hazard scan ----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The scan of SassHazards.h on hand-written SASS: it flags a BSYNC on a
// reloaded barrier only while lanes wait on that barrier.
//
//===----------------------------------------------------------------------===//

#include "SassHazards.h"

#include <gtest/gtest.h>

namespace te {
namespace {

// The shape ptxas gave the master-shard kernels: lanes whose task is
// invalid branch to the outer region's BSYNC B11 and wait there; the
// others reload B11 with an inner region's mask and BSYNC on it.
const char *kHazard = R"(
kernel:
        /*0100*/                   BSSY B11, `(.L_x_2) ;
        /*0110*/               @P6 BRA `(.L_x_1) ;
        /*0120*/                   BSSY B0, `(.L_x_3) ;
        /*0130*/                   BMOV.32.CLEAR R24, B0 ;
        /*0140*/               @P2 BRA `(.L_x_4) ;
.L_x_4:
        /*0150*/                   BMOV.32.CLEAR R16, B11 ;
        /*0160*/                   BMOV.32 B11, R24 ;
        /*0170*/                   BSYNC B11 ;
.L_x_3:
        /*0180*/                   BMOV.32 B11, R16 ;
.L_x_1:
        /*0190*/                   BSYNC B11 ;
.L_x_2:
        /*01a0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
)";

TEST(SassHazards, FindsABarrierReloadedWhileLanesWaitOnIt) {
  std::vector<std::string> h = test::reconvergenceHazards(kHazard);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0], "kernel at 0x0160");
}

TEST(SassHazards, AReloadWithNoLaneWaitingIsFine) {
  // The same code without the branch of the skipping lanes.
  std::string sass = kHazard;
  sass.erase(sass.find("        /*0110*/"),
             sass.find("        /*0120*/") - sass.find("        /*0110*/"));
  EXPECT_TRUE(test::reconvergenceHazards(sass).empty());
}

TEST(SassHazards, RegionsEndAtTheirLabelAndFunction) {
  // A later region on the same barrier, after the waiting one closed.
  std::string sass = std::string(kHazard) + R"(
        /*01b0*/                   BSSY B11, `(.L_x_6) ;
        /*01c0*/                   BMOV.32 B11, R3 ;
        /*01d0*/                   BSYNC B11 ;
.L_x_6:
other:
        /*0000*/                   BMOV.32 B11, R3 ;
        /*0010*/                   BSYNC B11 ;
)";
  EXPECT_EQ(test::reconvergenceHazards(sass).size(), 1u);
}

} // namespace
} // namespace te
