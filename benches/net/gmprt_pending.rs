//! Stand-in for gmprt_side.rs until gmprt::net's TCP types are merged: no gmprt servers, so the
//! bench runs the tokio peer alone (and says so). After the merge, net.rs compiles
//! gmprt_side.rs instead and this file can go.

use super::peers::Side;

/// No gmprt servers yet.
pub fn side() -> Option<Side> {
    None
}
